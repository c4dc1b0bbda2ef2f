//! The network stream: flows generated, split into packets and shuffled
//! exactly as STAMP's `stream_generate` does, so the same flags give the
//! same packets in the same order as the C program.

use super::detector::SIGNATURES;

/// One packet: a fragment of a flow's payload.
///
/// Fragment `i` of a flow split into `n` carries bytes `[i*b, (i+1)*b)`
/// of the payload (`b = len / n`), the last one also the remainder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The flow it belongs to, `0..flows`.
    pub flow: u32,
    /// Its position in the flow, `0..fragments`.
    pub fragment: u16,
    /// How many fragments the flow has.
    pub fragments: u16,
    /// Where its bytes start in [`Stream::bytes`].
    pub offset: u32,
    /// How many bytes it carries.
    pub len: u16,
}

impl Packet {
    /// Where its bytes are, as one non-zero word: a flag bit, the offset,
    /// the length (what reassembly keeps per fragment; see
    /// [`Stream::piece`]).
    #[inline]
    pub fn piece(&self) -> u64 {
        (1 << 63) | (u64::from(self.offset) << 16) | u64::from(self.len)
    }
}

/// Bad stream parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// More payload than the stream can address.
    #[error(
        "{flows} flows of up to {length} bytes could need {bytes} payload bytes; at most {max} are allowed (lower -n or -l)"
    )]
    TooLarge {
        /// `-n`.
        flows: u32,
        /// `-l`.
        length: u32,
        /// The worst-case payload size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// A parameter out of its range.
    #[error("{what} is {value}; allowed: {allowed}")]
    OutOfRange {
        /// The parameter.
        what: &'static str,
        /// Its value.
        value: u64,
        /// What is allowed.
        allowed: &'static str,
    },
}

/// What the generator made: the shuffled packets, the payloads, and which
/// flows are attacks (the ground truth the self-check compares against).
#[derive(Debug, Clone)]
pub struct Stream {
    /// The packets in arrival order (shuffled).
    pub packets: Vec<Packet>,
    /// Every payload, flow after flow.
    pub bytes: Vec<u8>,
    /// Per flow, where its payload lies in `bytes` (`offset`, `len`).
    pub payloads: Vec<(u32, u32)>,
    /// Per flow, whether it is an attack: injected from the dictionary, or a
    /// random payload that happens to contain a signature (STAMP counts
    /// both).
    pub attack: Vec<bool>,
    /// How many attacks were injected from the dictionary.
    pub injected: u32,
}

/// Payload bytes a stream may hold (packet offsets are `u32`).
const MAX_BYTES: u64 = u32::MAX as u64;

/// A digest of a payload (FNV-1a, never 0: 0 means "not decoded").
///
/// # Examples
///
/// ```
/// use skelaff_stamp_intruder::digest;
///
/// assert_ne!(digest(b"abc"), digest(b"acb"));
/// assert_ne!(digest(b""), 0);
/// ```
pub fn digest(bytes: &[u8]) -> u64 {
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    h.max(1)
}

impl Stream {
    /// Generates `flows` flows, `percent_attack` percent of them attacks
    /// taken from the dictionary and the others random printable strings of
    /// 1 to `max_length` bytes; splits each into 1 to len packets and
    /// shuffles all packets, every choice drawn from one generator seeded
    /// with `seed` (STAMP's `-a -n -l -s`).
    ///
    /// The generator is STAMP's (MT19937, seeded as its `random_seed`
    /// seeds) and the draws come in its order, so the flows, their packets
    /// and the arrival order are the C program's. Flows are numbered from 0
    /// here and from 1 in STAMP.
    ///
    /// # Errors
    ///
    /// [`StreamError`] for a percentage over 100, a zero or too large
    /// length, or more payload than a stream can hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use skelaff_stamp_intruder::Stream;
    ///
    /// let s = Stream::generate(10, 4, 100, 1)?;
    /// assert_eq!(s.attack.len(), 100);
    /// assert!(s.packets.len() >= 100);
    /// # Ok::<(), skelaff_stamp_intruder::StreamError>(())
    /// ```
    pub fn generate(percent_attack: u32, max_length: u32, flows: u32, seed: u64) -> Result<Stream, StreamError> {
        if percent_attack > 100 {
            return Err(StreamError::OutOfRange {
                what: "the attack percentage (-a)",
                value: percent_attack.into(),
                allowed: "0 to 100",
            });
        }
        if max_length == 0 || max_length > u32::from(u16::MAX) {
            return Err(StreamError::OutOfRange {
                what: "the maximum payload length (-l)",
                value: max_length.into(),
                allowed: "1 to 65535",
            });
        }
        let longest_signature = SIGNATURES.iter().map(|s| s.len()).max().unwrap_or(1) as u64;
        let worst = u64::from(flows) * u64::from(max_length).max(longest_signature);
        if worst > MAX_BYTES {
            return Err(StreamError::TooLarge { flows, length: max_length, bytes: worst, max: MAX_BYTES });
        }
        // STAMP's `random_seed` keeps the low 32 bits of the seed
        // (`init_genrand` masks it), and so does this.
        let mut rng = rand_mt::Mt::new(seed as u32);
        let mut draw = |n: u32| rng.next_u32() % n;
        let expected = u64::from(flows) * (u64::from(max_length) + 1) / 2;
        let mut s = Stream {
            packets: Vec::with_capacity(expected as usize),
            bytes: Vec::with_capacity(expected as usize),
            payloads: Vec::with_capacity(flows as usize),
            attack: Vec::with_capacity(flows as usize),
            injected: 0,
        };
        let printable = u32::from(b'~' - b' ') + 1;
        for flow in 0..flows {
            // The draws in STAMP's order: attack or not, then the word or
            // the length and each byte, then the packet count.
            let start = s.bytes.len();
            let attack = if draw(100) < percent_attack {
                s.bytes.extend_from_slice(SIGNATURES[draw(SIGNATURES.len() as u32) as usize].as_bytes());
                s.injected += 1;
                true
            } else {
                let len = draw(max_length) + 1;
                s.bytes.extend((0..len).map(|_| b' ' + draw(printable) as u8));
                // Ground truth by a different route than the detector's own
                // matcher: std's substring search on the lower-cased text.
                let text = String::from_utf8_lossy(&s.bytes[start..]).to_ascii_lowercase();
                SIGNATURES.iter().any(|sig| text.contains(sig))
            };
            let len = (s.bytes.len() - start) as u32;
            s.payloads.push((start as u32, len));
            s.attack.push(attack);
            let n = draw(len) + 1;
            let base = len / n;
            for i in 0..n {
                let extra = if i + 1 == n { len % n } else { 0 };
                s.packets.push(Packet {
                    flow,
                    fragment: i as u16,
                    fragments: n as u16,
                    offset: start as u32 + i * base,
                    len: (base + extra) as u16,
                });
            }
        }
        // STAMP's `queue_shuffle`: as many swaps as packets, each of two
        // positions drawn independently (not a Fisher-Yates shuffle).
        // (The count fits: there are no more packets than payload bytes.)
        let count = s.packets.len();
        if let Ok(n) = u32::try_from(count) {
            for _ in 0..count {
                let a = draw(n) as usize;
                let b = draw(n) as usize;
                s.packets.swap(a, b);
            }
        }
        Ok(s)
    }

    /// The number of flows.
    pub fn flows(&self) -> usize {
        self.payloads.len()
    }

    /// The bytes `p` carries.
    #[inline]
    pub fn data(&self, p: &Packet) -> &[u8] {
        &self.bytes[p.offset as usize..p.offset as usize + usize::from(p.len)]
    }

    /// The bytes of a [`Packet::piece`].
    #[inline]
    pub fn piece(&self, piece: u64) -> &[u8] {
        let offset = ((piece >> 16) & u64::from(u32::MAX)) as usize;
        &self.bytes[offset..offset + (piece & 0xffff) as usize]
    }

    /// Flow `flow`'s whole payload (what reassembly must rebuild).
    pub fn payload(&self, flow: usize) -> &[u8] {
        let (o, l) = self.payloads[flow];
        &self.bytes[o as usize..(o + l) as usize]
    }

    /// The attack flows, in increasing order.
    pub fn attacks(&self) -> Vec<u32> {
        self.attack.iter().enumerate().filter(|&(_, &a)| a).map(|(f, _)| f as u32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_rebuild_every_payload() {
        let s = Stream::generate(30, 16, 500, 7).unwrap();
        let mut by_flow: Vec<Vec<Packet>> = vec![Vec::new(); s.flows()];
        for p in &s.packets {
            by_flow[p.flow as usize].push(*p);
        }
        for (f, mut ps) in by_flow.into_iter().enumerate() {
            ps.sort_by_key(|p| p.fragment);
            assert_eq!(ps.len(), usize::from(ps[0].fragments));
            let rebuilt: Vec<u8> = ps.iter().flat_map(|p| s.data(p).to_vec()).collect();
            assert_eq!(rebuilt, s.payload(f));
        }
        assert!(s.injected > 0 && s.attacks().len() >= s.injected as usize);
    }

    /// FNV-1a over each packet in arrival order: STAMP's flow id (from 1),
    /// fragment, fragment count, length, then its bytes.
    fn stamp_hash(s: &Stream) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut mix = |v: u64| h = (h ^ v).wrapping_mul(0x100_0000_01b3);
        for p in &s.packets {
            for v in [u64::from(p.flow) + 1, p.fragment.into(), p.fragments.into(), p.len.into()] {
                mix(v);
            }
            for &b in s.data(p) {
                mix(b.into());
            }
        }
        h
    }

    /// The figures STAMP 0.9.10's own `stream_generate` gives (its
    /// `stream.c`, `dictionary.c`, `detector.c`, `queue.c`, `random.c` and
    /// `mt19937ar.c`, compiled with a small driver that pops every packet
    /// and hashes it as [`stamp_hash`] does): attacks (injected or found),
    /// packets, the hash, and the first packet as (flow from 1, fragment,
    /// count, data).
    #[test]
    fn the_stream_is_stamps() {
        let cases = [
            ((10, 20, 100, 0), 8, 637, 0xe050_9c8c_7d05_5a7f, (16, 2, 18, &b"N"[..])),
            ((10, 4, 2048, 1), 174, 3753, 0xbb9f_0302_8b87_17e1, (753, 1, 3, &b"a"[..])),
        ];
        for ((a, l, n, seed), attacks, packets, hash, first) in cases {
            let s = Stream::generate(a, l, n, seed).unwrap();
            assert_eq!(s.attacks().len(), attacks, "-a{a} -l{l} -n{n} -s{seed}");
            assert_eq!(s.packets.len(), packets, "-a{a} -l{l} -n{n} -s{seed}");
            let p = s.packets[0];
            assert_eq!((p.flow + 1, p.fragment, p.fragments, s.data(&p)), first, "-a{a} -l{l} -n{n} -s{seed}");
            assert_eq!(stamp_hash(&s), hash, "-a{a} -l{l} -n{n} -s{seed}");
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let a = Stream::generate(10, 8, 300, 3).unwrap();
        let b = Stream::generate(10, 8, 300, 3).unwrap();
        assert_eq!(a.packets, b.packets);
        assert_ne!(a.packets, Stream::generate(10, 8, 300, 4).unwrap().packets);
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(matches!(Stream::generate(101, 4, 10, 1), Err(StreamError::OutOfRange { .. })));
        assert!(matches!(Stream::generate(10, 0, 10, 1), Err(StreamError::OutOfRange { .. })));
        assert!(matches!(Stream::generate(10, 65535, u32::MAX, 1), Err(StreamError::TooLarge { .. })));
    }
}
