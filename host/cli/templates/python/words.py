"""The plugin's own logic, plain Python: unit-tested with
`python3 -m unittest`, no sandbox needed."""


def count_words(text: str) -> int:
    """The number of words in `text`."""
    return len(text.split())
