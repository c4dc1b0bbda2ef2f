//! genome's input: a random gene and overlapping segments sampled from it
//! (STAMP's `gene.c` and `segments.c`).

/// The longest segment accepted: a segment is packed 2 bits per
/// nucleotide into a `u128`.
pub const MAX_SEGMENT: usize = 64;

/// The nucleotides, by code.
pub const NUCLEOTIDES: [u8; 4] = *b"acgt";

/// A gene (nucleotide codes 0..4, see [`NUCLEOTIDES`]) and the segments
/// the sequencer must put back together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The gene, one code per nucleotide.
    pub gene: Vec<u8>,
    /// Segment length.
    pub segment_length: usize,
    /// The segments, packed (see [`pack`]); duplicates included, in the
    /// order they were drawn.
    pub segments: Vec<u128>,
}

/// Packs nucleotide codes into a `u128`, the first nucleotide in the
/// highest bits (so the prefix of length `l` of a packed segment of length
/// `s` is `key >> 2 * (s - l)`, and its suffix `key & mask(l)`).
#[inline]
pub fn pack(codes: &[u8]) -> u128 {
    codes.iter().fold(0u128, |k, &c| (k << 2) | u128::from(c & 3))
}

/// The nucleotide codes of a packed segment of length `len`.
pub fn unpack(key: u128, len: usize) -> impl Iterator<Item = u8> {
    (0..len).rev().map(move |i| ((key >> (2 * i)) & 3) as u8)
}

/// The low `2 * l` bits.
#[inline]
pub(crate) fn mask(l: usize) -> u128 {
    if l >= 64 { u128::MAX } else { (1u128 << (2 * l)) - 1 }
}

impl Input {
    /// The gene as text (`acgt…`).
    pub fn gene_text(&self) -> String {
        self.gene.iter().map(|&c| NUCLEOTIDES[usize::from(c & 3)] as char).collect()
    }

    /// Generates a gene of `gene_length` random nucleotides and at least
    /// `min_segments` segments of `segment_length` (STAMP's
    /// `segments_create`): `min_segments` segments start at random
    /// positions; then one starting at 0 is added if missing, and more
    /// wherever `segment_length - 1` positions in a row start none, so that
    /// consecutive segments overlap and the whole gene is covered.
    ///
    /// Every draw comes from STAMP's Mersenne Twister (MT19937, seeded
    /// with the low 32 bits of `seed`, as STAMP's `random_seed`) in STAMP's
    /// order: one draw per nucleotide (`% 4`), then one per random start
    /// (`% starts`). So the same flags give STAMP's own gene and segments
    /// (STAMP's genome seeds with 0, the default of `--seed`).
    ///
    /// The caller checks `2 <= segment_length <= min(gene_length,
    /// MAX_SEGMENT)`.
    pub fn generate(gene_length: usize, segment_length: usize, min_segments: usize, seed: u64) -> Input {
        let mut rng = rand_mt::Mt::new(seed as u32);
        let gene: Vec<u8> = (0..gene_length).map(|_| (rng.next_u32() % 4) as u8).collect();
        let segments = draw_starts(&mut rng, gene_length, segment_length, min_segments)
            .into_iter()
            .map(|at| pack(&gene[at..at + segment_length]))
            .collect();
        Input { gene, segment_length, segments }
    }
}

/// Where the segments start, in the order they are drawn (see
/// [`Input::generate`]).
fn draw_starts(rng: &mut rand_mt::Mt, gene_length: usize, s: usize, min_segments: usize) -> Vec<usize> {
    let starts = gene_length - s + 1;
    let mut covered = vec![false; starts];
    let mut out = Vec::with_capacity(min_segments + starts / s + 1);
    let mut take = |at: usize, covered: &mut [bool]| {
        covered[at] = true;
        out.push(at);
    };
    for _ in 0..min_segments {
        take(rng.next_u32() as usize % starts, &mut covered);
    }
    if !covered[0] {
        take(0, &mut covered);
    }
    // Fill every run of s - 1 uncovered starts with a segment at its end.
    let mut i = 0;
    while i < starts {
        let stop = (i + s - 1).min(starts);
        match (i..stop).find(|&j| covered[j]) {
            Some(j) => i = j + 1,
            None => {
                take(stop - 1, &mut covered);
                i = stop;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_and_slices() {
        let codes = [2u8, 0, 3, 1, 1, 2];
        let k = pack(&codes);
        assert_eq!(unpack(k, 6).collect::<Vec<_>>(), codes);
        assert_eq!(k >> (2 * 2), pack(&codes[..4]), "prefix");
        assert_eq!(k & mask(3), pack(&codes[3..]), "suffix");
        let long = [3u8; 64];
        assert_eq!(unpack(pack(&long), 64).count(), 64);
        assert_eq!(mask(64), u128::MAX);
    }

    /// What STAMP's own generator (its `gene_create` and `segments_create`
    /// with `random_seed(0)`, compiled from STAMP 0.9.10 and run) makes:
    /// the gene's first 40 nucleotides, the number of segments, the first
    /// three segments and the last one.
    #[test]
    fn same_data_as_stamps_generator() {
        let cases: [(usize, usize, usize, usize, [&str; 4]); 3] = [
            (256, 16, 16384, 16384, ["aaacgacgtggtcaaa", "acgtgcgcaggtatgt", "tctcgatgaaagcgtt", "ttttctcgatgaaagc"]),
            (
                16384,
                64,
                4096,
                4098,
                [
                    "ggacgtcattgacccgggtcgtttttctgaaccaccggtgcgggcgtgccgcgtaacattgccc",
                    "caaaaaaggtcgtgtctaggtccgaacttcattggcttgatgtcccgagtgcttggtttcctag",
                    "tcatcataccaattctcacgatcgatacgccgctatgtccctataggagttaattcgcagctat",
                    "tcacggagctttgacggagcatccgacgaacgccaagactggcatggaaatacaagcttatggc",
                ],
            ),
            (64, 8, 4, 11, ["tgaaagcg", "tttctcga", "cacatatc", "tgattgtg"]),
        ];
        for (g, s, n, count, segs) in cases {
            let input = Input::generate(g, s, n, 0);
            assert_eq!(&input.gene_text()[..40], "atcattttctcgatgaaagcgttgaccccacatatcgtta");
            assert_eq!(input.segments.len(), count, "-g{g} -s{s} -n{n}");
            let text = |k: u128| unpack(k, s).map(|c| NUCLEOTIDES[usize::from(c)] as char).collect::<String>();
            let got = [0, 1, 2, count - 1].map(|i| text(input.segments[i]));
            assert_eq!(got, segs, "-g{g} -s{s} -n{n}");
        }
    }

    #[test]
    fn segments_cover_the_gene_with_overlaps() {
        for (g, s, n, seed) in [(10, 4, 20, 0), (20, 5, 1, 1), (100, 10, 1000, 2), (100, 10, 1, 3), (300, 64, 3, 4)] {
            let mut rng = rand_mt::Mt::new(seed);
            let mut starts = draw_starts(&mut rng, g, s, n);
            assert!(starts.len() >= n);
            starts.sort_unstable();
            starts.dedup();
            assert_eq!(starts[0], 0);
            assert_eq!(*starts.last().unwrap(), g - s, "the end is covered");
            assert!(starts.windows(2).all(|w| w[1] - w[0] < s), "consecutive segments overlap");
        }
        let input = Input::generate(100, 10, 50, 9);
        assert_eq!(input.gene.len(), 100);
        for &k in &input.segments {
            assert!((0..=90).any(|i| pack(&input.gene[i..i + 10]) == k), "every segment comes from the gene");
        }
    }
}
