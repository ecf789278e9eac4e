import os
import tempfile
import unittest

import iniparse
from iniparse import Config, NoOptionError, NoSectionError

SAMPLE = """
[DEFAULT]
timeout = 30

[server]
host = example.org
port = 8080
ratio = 0.75
debug = Off
tags = web, api ,  , internal
hosts =
    a.example.org
    b.example.org
"""


class ConfigTests(unittest.TestCase):
    def setUp(self):
        self.cfg = iniparse.loads(SAMPLE)

    def test_sections_and_options(self):
        self.assertEqual(self.cfg.sections(), ["server"])
        self.assertIn("timeout", self.cfg.options("server"))
        self.assertTrue(self.cfg.has_option("server", "TIMEOUT"))
        self.assertIn("server", self.cfg)

    def test_typed_getters(self):
        self.assertEqual(self.cfg.getint("server", "port"), 8080)
        self.assertEqual(self.cfg.getint("server", "timeout"), 30)
        self.assertAlmostEqual(self.cfg.getfloat("server", "ratio"), 0.75)
        self.assertIs(self.cfg.getboolean("server", "debug"), False)
        self.assertEqual(self.cfg.getlist("server", "tags"), ["web", "api", "internal"])
        self.assertEqual(self.cfg.getlist("server", "hosts", sep=None),
                         ["a.example.org", "b.example.org"])

    def test_bad_values(self):
        self.assertRaises(ValueError, self.cfg.getint, "server", "host")
        self.assertRaises(ValueError, self.cfg.getboolean, "server", "host")

    def test_missing(self):
        self.assertRaises(NoSectionError, self.cfg.get, "nope", "x")
        self.assertRaises(NoOptionError, self.cfg.get, "server", "nope")
        self.assertRaises(KeyError, self.cfg.get, "server", "nope")
        self.assertEqual(self.cfg.getint("server", "retries", fallback=0), 0)
        self.assertIsNone(self.cfg.get("nope", "x", fallback=None))

    def test_set_and_read_dict(self):
        cfg = Config()
        cfg.read_dict({"db": {"Port": 5432, "name": "main"}})
        cfg.set("db", "name", "replica")
        self.assertEqual(cfg.as_dict(), {"db": {"port": "5432", "name": "replica"}})

    def test_read_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "app.ini")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("[a]\nx = 1\n")
            self.assertEqual(iniparse.load(path).getint("a", "x"), 1)


if __name__ == "__main__":
    unittest.main()
