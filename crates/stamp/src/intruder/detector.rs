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
/// # Examples
///
/// ```
/// use skelaff_stamp::intruder::Detector;
///
/// let mut d = Detector::default();
/// assert!(d.is_attack(b"xx ThInK yy"));
/// assert!(!d.is_attack(b"zzq 12"));
/// ```
#[derive(Debug, Default, Clone)]
pub struct Detector {
    lower: Vec<u8>,
}

impl Detector {
    /// Whether `payload` matches a signature (case-insensitively).
    pub fn is_attack(&mut self, payload: &[u8]) -> bool {
        self.lower.clear();
        self.lower.extend(payload.iter().map(u8::to_ascii_lowercase));
        let text = &self.lower[..];
        SIGNATURES.iter().any(|sig| contains(text, sig.as_bytes()))
    }
}

/// Whether `needle` (non-empty) occurs in `hay`: compare at every position
/// where the first byte matches.
#[inline]
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else { return true };
    if hay.len() < needle.len() {
        return false;
    }
    let last_start = hay.len() - needle.len();
    hay[..=last_start].iter().enumerate().any(|(i, &b)| b == first && &hay[i + 1..i + needle.len()] == rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_agrees_with_std() {
        let cases: [&[u8]; 6] = [b"", b"a", b"an", b"and", b"xANDx", b"bcausebecause"];
        for hay in cases {
            for sig in SIGNATURES {
                let want = String::from_utf8_lossy(hay).to_ascii_lowercase().contains(sig);
                assert_eq!(contains(&hay.to_ascii_lowercase(), sig.as_bytes()), want, "{hay:?} {sig}");
            }
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
