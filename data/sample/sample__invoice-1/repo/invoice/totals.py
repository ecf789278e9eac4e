"""Invoice totals: subtotal, invoice discount, tax per rate and grand total."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Dict, Iterable, List, Optional

from invoice.discounts import Discount
from invoice.lines import LineItem
from invoice.money import format_money, to_money

ZERO = Decimal("0.00")


@dataclass(frozen=True)
class TaxLine:
    """Tax charged at one rate: ``rate`` percent of ``base``."""

    rate: Decimal
    base: Decimal
    tax: Decimal


class Invoice:
    """A list of :class:`LineItem` plus an optional invoice-level :class:`Discount`.

    Tax is computed per rate on the summed line amounts of that rate and
    rounded once per rate (not per line).
    """

    def __init__(
        self,
        lines: Iterable[LineItem] = (),
        discount: Optional[Discount] = None,
        currency: str = "EUR",
    ) -> None:
        self.lines: List[LineItem] = list(lines)
        self.discount = discount
        self.currency = currency

    def add(self, line: LineItem) -> "Invoice":
        """Append a line; returns the invoice for chaining."""
        self.lines.append(line)
        return self

    # ------------------------------------------------------------------ amounts

    @property
    def subtotal(self) -> Decimal:
        """Sum of the line amounts (after line discounts), before tax."""
        return sum((line.net for line in self.lines), ZERO)

    @property
    def discount_amount(self) -> Decimal:
        """The invoice-level discount in money (0 without a discount)."""
        if self.discount is None or not self.lines:
            return ZERO
        return to_money(self.discount.amount_for(self.subtotal))

    def taxable_by_rate(self) -> Dict[Decimal, Decimal]:
        """The taxable amount for each tax rate, in ascending rate order."""
        groups: Dict[Decimal, Decimal] = {}
        for line in self.lines:
            groups[line.rate] = groups.get(line.rate, ZERO) + line.net
        return dict(sorted(groups.items()))

    def tax_lines(self) -> List[TaxLine]:
        """One :class:`TaxLine` per rate."""
        return [
            TaxLine(rate, base, to_money(base * rate / 100))
            for rate, base in self.taxable_by_rate().items()
        ]

    @property
    def tax_total(self) -> Decimal:
        return sum((t.tax for t in self.tax_lines()), ZERO)

    @property
    def total(self) -> Decimal:
        """What the customer pays: subtotal - discount + tax."""
        return self.subtotal - self.discount_amount + self.tax_total

    # ------------------------------------------------------------------ output

    def breakdown(self) -> List[str]:
        """Human readable summary lines."""
        money = lambda amount: format_money(amount, self.currency)  # noqa: E731
        out = [f"Subtotal: {money(self.subtotal)}"]
        if self.discount_amount:
            out.append(f"Discount: -{money(self.discount_amount)}")
        for t in self.tax_lines():
            out.append(f"Tax {t.rate.normalize():f}% on {money(t.base)}: {money(t.tax)}")
        out.append(f"Total: {money(self.total)}")
        return out
