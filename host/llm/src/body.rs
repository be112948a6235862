//! A request body as the pieces it is joined from. A task keeps its
//! system prompt's and its messages' encodings from turn to turn, and
//! every task offered the same tools shares one encoding of them; a body
//! that copied them into one buffer would hold a second copy of all of it
//! for as long as the model takes to answer, for every task waiting at
//! once. A [`RequestBody`] holds those parts themselves, and the HTTP
//! transport writes them out piece by piece.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

/// A request body: its pieces in order, shared with whatever they were
/// taken from. Cloning it is a reference count.
#[derive(Clone, Debug, Default)]
pub struct RequestBody {
    pieces: Arc<[Bytes]>,
    len: usize,
}

impl RequestBody {
    /// The pieces, in order (none empty).
    pub fn pieces(&self) -> &[Bytes] {
        &self.pieces
    }

    /// Bytes in the body.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The body as one buffer, for a reader that parses it whole: a copy,
    /// unless the body is one piece.
    pub fn to_bytes(&self) -> Bytes {
        match &self.pieces[..] {
            [] => Bytes::new(),
            [one] => one.clone(),
            many => {
                let mut out = Vec::with_capacity(self.len);
                for p in many {
                    out.extend_from_slice(p);
                }
                Bytes::from(out)
            }
        }
    }

    /// Hand `each` the offset (from the body's start) of every occurrence
    /// of `finder`'s needle, in order, one split across pieces included,
    /// without joining them.
    pub fn find_each(&self, finder: &memchr::memmem::Finder<'_>, mut each: impl FnMut(usize)) {
        let needle = finder.needle();
        if needle.is_empty() {
            return;
        }
        let keep = needle.len() - 1;
        // The last `keep` bytes before the current piece: an occurrence
        // that starts there ends in this piece or a later one.
        let mut carry: Vec<u8> = Vec::with_capacity(keep);
        let mut seam: Vec<u8> = Vec::with_capacity(2 * keep);
        let mut start = 0usize;
        for p in self.pieces.iter() {
            // An occurrence can start in the carry only where a suffix of
            // it begins the needle.
            let may_span = (1..=carry.len()).any(|k| carry.ends_with(&needle[..k]));
            if may_span {
                seam.clear();
                seam.extend_from_slice(&carry);
                seam.extend_from_slice(&p[..p.len().min(keep)]);
                // Only occurrences that start in the carry and end in
                // this piece: those wholly in either are found there.
                let carried = carry.len();
                for at in finder.find_iter(&seam) {
                    if at < carried && at + needle.len() > carried {
                        each(start - carried + at);
                    }
                }
            }
            if p.len() >= needle.len() {
                for at in finder.find_iter(p) {
                    each(start + at);
                }
            }
            if p.len() >= keep {
                carry.clear();
                carry.extend_from_slice(&p[p.len() - keep..]);
            } else {
                carry.extend_from_slice(p);
                if carry.len() > keep {
                    carry.drain(..carry.len() - keep);
                }
            }
            start += p.len();
        }
    }

    /// Whether the body's bytes from offset `at` begin with `prefix`
    /// (read across pieces).
    pub fn has_at(&self, at: usize, prefix: &[u8]) -> bool {
        // What is still to match, and its offset in the body.
        let mut want = prefix;
        let mut pos = at;
        let mut start = 0usize;
        for p in self.pieces.iter() {
            if want.is_empty() {
                break;
            }
            let end = start + p.len();
            if pos < end {
                let from = pos - start;
                let take = want.len().min(p.len() - from);
                if p[from..from + take] != want[..take] {
                    return false;
                }
                want = &want[take..];
                pos += take;
            }
            start = end;
        }
        want.is_empty()
    }
}

impl From<Bytes> for RequestBody {
    fn from(b: Bytes) -> Self {
        let len = b.len();
        let pieces: Arc<[Bytes]> = if b.is_empty() {
            Arc::new([])
        } else {
            Arc::new([b])
        };
        Self { pieces, len }
    }
}

impl From<Vec<u8>> for RequestBody {
    fn from(v: Vec<u8>) -> Self {
        Bytes::from(v).into()
    }
}

impl From<&'static [u8]> for RequestBody {
    fn from(s: &'static [u8]) -> Self {
        Bytes::from_static(s).into()
    }
}

/// Joins a [`RequestBody`]: the wire format's punctuation and small
/// fields are copied into pieces of their own, the kept parts shared.
#[derive(Default)]
pub struct BodyBuilder {
    pieces: Vec<Bytes>,
    small: Vec<u8>,
    len: usize,
}

impl BodyBuilder {
    /// A builder for a body of about `parts` shared parts.
    pub fn with_capacity(parts: usize) -> Self {
        Self {
            pieces: Vec::with_capacity(parts.saturating_mul(2).saturating_add(2)),
            small: Vec::new(),
            len: 0,
        }
    }

    /// Copy `bytes` into the body (punctuation, a field's small value).
    pub fn push(&mut self, bytes: &[u8]) {
        self.small.extend_from_slice(bytes);
    }

    /// Where copied bytes go: a field's encoding is written into it.
    pub fn small(&mut self) -> &mut Vec<u8> {
        &mut self.small
    }

    /// Add `part` as it is, shared, not copied.
    pub fn share(&mut self, part: &Bytes) {
        if part.is_empty() {
            return;
        }
        self.flush();
        self.len += part.len();
        self.pieces.push(part.clone());
    }

    /// Add the punctuation `bytes` without copying it, when nothing is
    /// buffered before it; copied after what is.
    pub fn push_static(&mut self, bytes: &'static [u8]) {
        if self.small.is_empty() {
            self.len += bytes.len();
            self.pieces.push(Bytes::from_static(bytes));
        } else {
            self.small.extend_from_slice(bytes);
        }
    }

    fn flush(&mut self) {
        if !self.small.is_empty() {
            let small = std::mem::take(&mut self.small);
            self.len += small.len();
            self.pieces.push(Bytes::from(small));
        }
    }

    /// The body.
    pub fn finish(mut self) -> RequestBody {
        self.flush();
        RequestBody {
            pieces: self.pieces.into(),
            len: self.len,
        }
    }
}

/// A [`RequestBody`] as an HTTP body: each piece one frame, the length
/// known in advance (so it goes out with a `Content-Length`, not chunked).
pub(crate) struct HttpBody {
    body: RequestBody,
    next: usize,
    left: u64,
}

impl HttpBody {
    pub(crate) fn new(body: RequestBody) -> Self {
        let left = u64::try_from(body.len()).unwrap_or(u64::MAX);
        Self {
            body,
            next: 0,
            left,
        }
    }
}

impl http_body::Body for HttpBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let Some(piece) = self.body.pieces.get(self.next).cloned() else {
            return Poll::Ready(None);
        };
        self.next += 1;
        self.left = self
            .left
            .saturating_sub(u64::try_from(piece.len()).unwrap_or(u64::MAX));
        Poll::Ready(Some(Ok(http_body::Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.next >= self.body.pieces.len()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(pieces: &[&'static [u8]]) -> RequestBody {
        let mut b = BodyBuilder::default();
        for p in pieces {
            b.share(&Bytes::from_static(p));
        }
        b.finish()
    }

    /// Offsets found and prefixes read across pieces agree with the
    /// joined body's, however it is cut.
    #[test]
    fn find_each_and_has_at_read_across_pieces() {
        let joined: &'static [u8] =
            b"{\"role\":\"user\"},{\"role\": \"assistant\"},{\"role\":\"assistant\"}";
        let finder = memchr::memmem::Finder::new(b"\"role\":");
        let want: Vec<usize> = memchr::memmem::find_iter(joined, b"\"role\":").collect();
        for cut_a in 0..joined.len() {
            for cut_b in cut_a..joined.len() {
                let body = body_of(&[&joined[..cut_a], &joined[cut_a..cut_b], &joined[cut_b..]]);
                let mut found = Vec::new();
                body.find_each(&finder, |at| found.push(at));
                assert_eq!(found, want, "cut at {cut_a} and {cut_b}");
                for at in [0, 9, 17, 27, 40, joined.len() - 3, joined.len()] {
                    for prefix in [&b"\"assistant\""[..], b" \"assistant\"", b"\"}", b""] {
                        assert_eq!(
                            body.has_at(at, prefix),
                            joined[at..].starts_with(prefix),
                            "cut at {cut_a} and {cut_b}, {prefix:?} at {at}"
                        );
                    }
                }
            }
        }
    }

    /// A needle is counted once wherever it falls: inside a piece, across
    /// two pieces, or across three, and the joined body agrees.
    #[test]
    fn find_each_sees_occurrences_across_pieces() {
        let needle = b"\"role\":\"assistant\"";
        let finder = memchr::memmem::Finder::new(needle);
        let cases: [(&[&'static [u8]], usize); 6] = [
            (&[b"{\"role\":\"assistant\"}"], 1),
            (&[b"{\"role\":\"assi", b"stant\"}"], 1),
            (
                &[b"{\"ro", b"le\":\"assis", b"tant\"},\"role\":\"assistant\""],
                2,
            ),
            (&[b"\"role\":\"assistant\"", b"\"role\":\"assistant\""], 2),
            (&[b"\"role\":\"assistan", b"x\""], 0),
            (&[], 0),
        ];
        for (pieces, want) in cases {
            let body = body_of(pieces);
            let mut found = 0;
            body.find_each(&finder, |_| found += 1);
            assert_eq!(found, want, "{pieces:?}");
            let joined = body.to_bytes();
            assert_eq!(
                memchr::memmem::find_iter(&joined, needle).count(),
                want,
                "{pieces:?} joined"
            );
        }
    }

    /// Punctuation and shared parts come out in the order pushed, the
    /// length counts every byte, and empty parts leave no piece.
    #[test]
    fn a_built_body_joins_in_order() {
        let shared = Bytes::from_static(b"SHARED");
        let mut b = BodyBuilder::with_capacity(2);
        b.push_static(b"{");
        b.push(b"\"a\":");
        b.share(&shared);
        b.share(&Bytes::new());
        b.push_static(b",");
        b.share(&shared);
        b.push_static(b"}");
        let body = b.finish();
        assert_eq!(&body.to_bytes()[..], b"{\"a\":SHARED,SHARED}");
        assert_eq!(body.len(), body.to_bytes().len());
        assert!(body.pieces().iter().all(|p| !p.is_empty()));
        // The shared part is the same memory, not a copy.
        assert!(
            body.pieces()
                .iter()
                .any(|p| std::ptr::eq(p.as_ptr(), shared.as_ptr()))
        );
    }
}
