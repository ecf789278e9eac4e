import unittest

import iniparse
from iniparse import InterpolationError, InterpolationMissingError

SAMPLE = """
[DEFAULT]
home = /srv/app

[paths]
logs = ${home}/logs
price = $$5
other = ${server:name}

[server]
name = web-1
missing = ${nope}
badsection = ${nowhere:x}
"""


class InterpolationTests(unittest.TestCase):
    def setUp(self):
        self.cfg = iniparse.loads(SAMPLE)

    def test_default_reference(self):
        self.assertEqual(self.cfg.get("paths", "logs"), "/srv/app/logs")

    def test_cross_section_reference(self):
        self.assertEqual(self.cfg.get("paths", "other"), "web-1")

    def test_escaped_dollar(self):
        self.assertEqual(self.cfg.get("paths", "price"), "$5")

    def test_raw(self):
        self.assertEqual(self.cfg.get("paths", "logs", raw=True), "${home}/logs")

    def test_missing_reference(self):
        self.assertRaises(InterpolationMissingError, self.cfg.get, "server", "missing")
        self.assertRaises(InterpolationError, self.cfg.get, "server", "badsection")

    def test_items_are_expanded(self):
        self.assertIn(("logs", "/srv/app/logs"), self.cfg.items("paths"))


if __name__ == "__main__":
    unittest.main()
