import unittest

from iniparse import ParseError, loads
from iniparse.parser import parse


class ParserTests(unittest.TestCase):
    def test_sections_and_options(self):
        sections = parse("[a]\nx = 1\ny: two\n\n[b]\nZ = 3\n")
        self.assertEqual(list(sections), ["DEFAULT", "a", "b"])
        self.assertEqual(sections["a"], {"x": "1", "y": "two"})
        self.assertEqual(sections["b"], {"z": "3"})

    def test_comments(self):
        sections = parse("# leading\n[a]\n; full line\nx = 1 ; inline\nurl = http://h/#frag\n")
        self.assertEqual(sections["a"], {"x": "1", "url": "http://h/#frag"})

    def test_continuation_lines(self):
        sections = parse("[a]\nhosts = one\n    two\n    three\nnext = 1\n")
        self.assertEqual(sections["a"]["hosts"], "one\ntwo\nthree")
        self.assertEqual(sections["a"]["next"], "1")

    def test_options_before_first_section_are_defaults(self):
        sections = parse("x = 1\n[a]\ny = 2\n")
        self.assertEqual(sections["DEFAULT"], {"x": "1"})

    def test_duplicate_option_is_error_when_strict(self):
        with self.assertRaises(ParseError) as ctx:
            parse("[a]\nx = 1\nx = 2\n")
        self.assertEqual(ctx.exception.lineno, 3)
        self.assertEqual(parse("[a]\nx = 1\nx = 2\n", strict=False)["a"]["x"], "2")

    def test_garbage_line(self):
        with self.assertRaises(ParseError):
            loads("[a]\nthis is not an option\n")


if __name__ == "__main__":
    unittest.main()
