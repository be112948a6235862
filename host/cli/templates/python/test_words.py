import unittest

from words import count_words


class CountWords(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(count_words("one two\nthree"), 3)
        self.assertEqual(count_words("  "), 0)


if __name__ == "__main__":
    unittest.main()
