//! Splitting one fuzz input into the parts a target needs, so the fuzzer
//! mutates each part and libFuzzer's dictionaries and corpora stay plain
//! files.

/// A cursor over fuzz bytes: a few choice bytes first, the rest as text.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// The input `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte (0 when spent).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// The next part up to a NUL byte (or all that is left).
    pub fn part(&mut self) -> &'a [u8] {
        match self.data.iter().position(|b| *b == 0) {
            Some(at) => {
                let (part, rest) = self.data.split_at(at);
                self.data = rest.get(1..).unwrap_or_default();
                part
            }
            None => std::mem::take(&mut self.data),
        }
    }

    /// The next part as text (lossy: a parser of outside text gets UTF-8).
    pub fn text(&mut self) -> String {
        String::from_utf8_lossy(self.part()).into_owned()
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}
