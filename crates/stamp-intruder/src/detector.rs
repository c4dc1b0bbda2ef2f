//! Detection: the attack dictionary and the signature match.

/// The attack signatures: STAMP's default dictionary (71 common English
/// words). A flow is an attack when its reassembled payload, lower-cased,
/// contains one of them.
pub const SIGNATURES: [&str; 71] = [
    "about", "after", "all", "also", "and", "any", "back", "because", "but", "can", "come", "could", "day", "even",
    "first", "for", "from", "get", "give", "good", "have", "him", "how", "into", "its", "just", "know", "like", "look",
    "make", "most", "new", "not", "now", "one", "only", "other", "out", "over", "people", "say", "see", "she", "some",
    "take", "than", "that", "their", "them", "then", "there", "these", "they", "think", "this", "time", "two", "use",
    "want", "way", "well", "what", "when", "which", "who", "will", "with", "work", "would", "year", "your",
];

/// The detector of one worker: a scratch buffer for the lower-cased
/// payload (STAMP's `toLower` preprocessor) and the signature match.
///
/// The match makes one pass over the payload: at each position it tries
/// only the signatures that start with the byte found there (the
/// dictionary is indexed by first byte), instead of one pass per
/// signature.
///
/// # Examples
///
/// ```
/// use skelaff_stamp_intruder::Detector;
///
/// let mut d = Detector::default();
/// assert!(d.is_attack(b"xx ThInK yy"));
/// assert!(!d.is_attack(b"zzq 12"));
/// ```
#[derive(Debug, Clone)]
pub struct Detector {
    lower: Vec<u8>,
    /// The signatures sorted by first byte, and per byte the range of
    /// those that start with it.
    sorted: Vec<&'static [u8]>,
    starting: Box<[(u8, u8); 256]>,
}

impl Default for Detector {
    fn default() -> Self {
        let mut sorted: Vec<&'static [u8]> = SIGNATURES.iter().map(|s| s.as_bytes()).collect();
        sorted.sort_unstable();
        let mut starting = Box::new([(0u8, 0u8); 256]);
        for (i, sig) in sorted.iter().enumerate() {
            let r = &mut starting[usize::from(sig[0])];
            if r.0 == r.1 {
                *r = (i as u8, i as u8);
            }
            r.1 = i as u8 + 1;
        }
        Detector { lower: Vec::new(), sorted, starting }
    }
}

impl Detector {
    /// Whether `payload` matches a signature (case-insensitively).
    pub fn is_attack(&mut self, payload: &[u8]) -> bool {
        self.lower.clear();
        self.lower.extend(payload.iter().map(u8::to_ascii_lowercase));
        let text = &self.lower[..];
        (0..text.len()).any(|i| {
            let (from, to) = self.starting[usize::from(text[i])];
            self.sorted[usize::from(from)..usize::from(to)].iter().any(|sig| starts_with(&text[i..], sig))
        })
    }
}

/// Whether `hay` starts with `needle` (a byte loop: the needles are a few
/// bytes long, shorter than a call to `memcmp`).
#[inline]
fn starts_with(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay.iter().zip(needle).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_agrees_with_std() {
        let mut d = Detector::default();
        let cases: [&[u8]; 8] = [b"", b"a", b"an", b"and", b"xANDx", b"bcausebecaus", b"youyoyoyour", b"WHO"];
        for hay in cases {
            let text = String::from_utf8_lossy(hay).to_ascii_lowercase();
            assert_eq!(d.is_attack(hay), SIGNATURES.iter().any(|s| text.contains(s)), "{hay:?}");
        }
        let mut rng = fastrand::Rng::with_seed(5);
        for _ in 0..20_000 {
            let hay: Vec<u8> = (0..rng.usize(0..12)).map(|_| rng.u8(b'a'..=b'z')).collect();
            let text = String::from_utf8_lossy(&hay).into_owned();
            assert_eq!(d.is_attack(&hay), SIGNATURES.iter().any(|s| text.contains(s)), "{text}");
        }
    }

    #[test]
    fn every_signature_is_detected() {
        let mut d = Detector::default();
        for sig in SIGNATURES {
            assert!(d.is_attack(sig.as_bytes()));
            assert!(d.is_attack(sig.to_ascii_uppercase().as_bytes()));
        }
        assert!(!d.is_attack(b"qqq"));
    }
}
