"""Exception hierarchy for iniparse."""


class ConfigError(Exception):
    """Base class for every error raised by iniparse."""


class ParseError(ConfigError):
    """The input is not valid INI syntax."""

    def __init__(self, message: str, lineno: int, source: str = "<string>"):
        super().__init__(f"{source}, line {lineno}: {message}")
        self.lineno = lineno
        self.source = source


class NoSectionError(ConfigError, KeyError):
    """The requested section does not exist."""

    def __init__(self, section: str):
        super().__init__(f"no section: {section!r}")
        self.section = section

    def __str__(self):
        return self.args[0]


class NoOptionError(ConfigError, KeyError):
    """The requested option does not exist in the section (or in DEFAULT)."""

    def __init__(self, section: str, option: str):
        super().__init__(f"no option {option!r} in section {section!r}")
        self.section = section
        self.option = option

    def __str__(self):
        return self.args[0]


class InterpolationError(ConfigError):
    """A ``${...}`` reference in a value could not be expanded."""

    def __init__(self, section: str, option: str, message: str):
        super().__init__(f"[{section}] {option}: {message}")
        self.section = section
        self.option = option


class InterpolationMissingError(InterpolationError):
    """A ``${...}`` reference names an option or section that does not exist."""

    def __init__(self, section: str, option: str, reference: str):
        super().__init__(section, option, f"bad reference ${{{reference}}}")
        self.reference = reference
