"""A stand-in for the expecttest package, which Debian lacks and PyTorch's
test utilities import (torch.testing._internal.common_utils). Its inline
expectations are compared, never rewritten: ACCEPT stays False.
"""

import re
import textwrap
import unittest

ACCEPT = False


def _normalize(s):
    return textwrap.dedent(s).strip()


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(_normalize(actual), _normalize(expect))

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args,
                                   **kwargs):
        with self.assertRaises(exc_type) as ctx:
            callable(*args, **kwargs)
        self.assertExpectedInline(str(ctx.exception), expect)

    def assertExpectedRaisesRegex(self, exc_type, pattern, callable, *args,
                                  **kwargs):
        with self.assertRaisesRegex(exc_type, re.compile(pattern)):
            callable(*args, **kwargs)
