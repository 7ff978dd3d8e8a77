//! The f32 product of a linear layer for a few rows (the word pieces of one query, or a
//! small batch), `out = xs · Wᵀ`, with the weights packed once at load time.
//!
//! A general matrix product (candle's, through `gemm`) packs its right-hand side into
//! cache-sized panels on every call; for a query of 6–20 rows that copy of the weights
//! costs as much as the arithmetic. Here the weights are packed once, at load, into
//! panels of [`PANEL`] outputs laid out input by input, so a product streams each weight
//! once, in order, and keeps [`ROWS`] × [`PANEL`] sums in registers while it does.
//!
//! On x86-64 CPUs with AVX2 and FMA the inner loop runs as 8-lane fused multiply-adds
//! through [`pulp`]'s `V3` token, which checks the CPU features at run time and makes the
//! intrinsics safe to call; elsewhere the same loop runs as plain Rust (which the
//! compiler vectorises for the baseline instruction set). Both give the same sums up to
//! rounding (`tests::products_match_a_naive_loop_for_every_block_size`).

/// Outputs per panel: two 8-lane vectors.
const PANEL: usize = 16;

/// Rows multiplied together by one pass over a panel: `ROWS · 2` accumulators plus two
/// weight vectors and a broadcast fit the sixteen vector registers of AVX2.
const ROWS: usize = 6;

/// Rows per group (eight blocks): a group of 1,536-wide rows transposed takes 288 KB,
/// within a core's L2 cache. One query's word pieces are one group.
const GROUP: usize = 8 * ROWS;

/// The weights of a linear layer (`output × input`), packed for [`Packed::product`].
#[derive(Debug)]
pub(crate) struct Packed {
    /// Panel `p` holds, for every input `k` in order, the weights of outputs
    /// `p·PANEL .. (p+1)·PANEL` (zero past `output`): `panels × input × PANEL`.
    panels: Vec<f32>,
    input: usize,
    output: usize,
}

impl Packed {
    /// Packs `weight`, `output` rows of `input` (row-major, as a safetensors file stores
    /// a linear layer). `None` when the length does not match.
    pub(crate) fn new(weight: &[f32], output: usize, input: usize) -> Option<Self> {
        if weight.len() != output.checked_mul(input)? || input == 0 {
            return None;
        }
        let mut panels = vec![0.0; output.div_ceil(PANEL) * input * PANEL];
        for (o, row) in weight.chunks_exact(input).enumerate() {
            let panel = &mut panels[(o / PANEL) * input * PANEL..][..input * PANEL];
            for (k, &w) in row.iter().enumerate() {
                panel[k * PANEL + o % PANEL] = w;
            }
        }
        Some(Self {
            panels,
            input,
            output,
        })
    }

    /// Bytes held by the packed weights.
    pub(crate) fn bytes(&self) -> usize {
        self.panels.len() * std::mem::size_of::<f32>()
    }

    /// `xs` (`rows × input`, row-major) times the weights, plus `bias` (one per output)
    /// on every row: `rows × output`.
    pub(crate) fn product(&self, xs: &[f32], bias: &[f32]) -> Vec<f32> {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return simd.vectorize(|| self.product_v3(simd, xs, bias));
        }
        self.product_plain(xs, bias)
    }

    /// The rows of `xs` in blocks of up to [`ROWS`], each block transposed to
    /// `input × block` (so one load per input gives every row's value), and the block
    /// sizes.
    fn blocks(&self, xs: &[f32]) -> Vec<(usize, Vec<f32>)> {
        let rows = xs.len() / self.input;
        (0..rows)
            .step_by(ROWS)
            .map(|first| {
                let block = ROWS.min(rows - first);
                let mut transposed = vec![0.0; self.input * block];
                for r in 0..block {
                    let row = &xs[(first + r) * self.input..][..self.input];
                    for (k, &x) in row.iter().enumerate() {
                        transposed[k * block + r] = x;
                    }
                }
                (block, transposed)
            })
            .collect()
    }

    /// Runs `kernel` over every panel and block, writing each block's sums, bias added,
    /// into the output rows. The rows go in groups of [`GROUP`], and within a group the
    /// panels are the outer loop: a panel's weights are read from memory once per group
    /// and reused by every block, while the group's transposed rows stay in cache.
    fn each_block(
        &self,
        xs: &[f32],
        bias: &[f32],
        mut kernel: impl FnMut(&[f32], usize, &[f32], &mut [[f32; PANEL]; ROWS]),
    ) -> Vec<f32> {
        let rows = xs.len() / self.input;
        let mut out = vec![0.0; rows * self.output];
        for (g, group) in xs[..rows * self.input]
            .chunks(GROUP * self.input)
            .enumerate()
        {
            let blocks = self.blocks(group);
            for (p, panel) in self.panels.chunks_exact(self.input * PANEL).enumerate() {
                let first_output = p * PANEL;
                let width = PANEL.min(self.output - first_output);
                for (b, (block, transposed)) in blocks.iter().enumerate() {
                    let mut sums = [[0.0f32; PANEL]; ROWS];
                    kernel(panel, *block, transposed, &mut sums);
                    for (r, sum) in sums.iter().take(*block).enumerate() {
                        let row = g * GROUP + b * ROWS + r;
                        let to = &mut out[row * self.output + first_output..][..width];
                        for ((y, s), bias) in to.iter_mut().zip(sum).zip(&bias[first_output..]) {
                            *y = s + bias;
                        }
                    }
                }
            }
        }
        out
    }

    fn product_plain(&self, xs: &[f32], bias: &[f32]) -> Vec<f32> {
        self.each_block(xs, bias, |panel, block, transposed, sums| {
            for (w, x) in panel
                .chunks_exact(PANEL)
                .zip(transposed.chunks_exact(block))
            {
                for (sum, &x) in sums.iter_mut().zip(x) {
                    for (s, w) in sum.iter_mut().zip(w) {
                        *s += x * w;
                    }
                }
            }
        })
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn product_v3(&self, simd: pulp::x86::V3, xs: &[f32], bias: &[f32]) -> Vec<f32> {
        self.each_block(xs, bias, |panel, block, transposed, sums| match block {
            6 => kernel_v3::<6>(simd, panel, transposed, sums),
            5 => kernel_v3::<5>(simd, panel, transposed, sums),
            4 => kernel_v3::<4>(simd, panel, transposed, sums),
            3 => kernel_v3::<3>(simd, panel, transposed, sums),
            2 => kernel_v3::<2>(simd, panel, transposed, sums),
            _ => kernel_v3::<1>(simd, panel, transposed, sums),
        })
    }
}

/// `R` rows (`transposed`: `input × R`) times one panel, into `sums[..R]`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn kernel_v3<const R: usize>(
    simd: pulp::x86::V3,
    panel: &[f32],
    transposed: &[f32],
    sums: &mut [[f32; PANEL]; ROWS],
) {
    use pulp::f32x8;
    let zero = simd.splat_f32x8(0.0);
    let mut acc = [[zero; 2]; R];
    let (weights, _) = panel.as_chunks::<PANEL>();
    let (inputs, _) = transposed.as_chunks::<R>();
    for (w, x) in weights.iter().zip(inputs) {
        let [w0, w1]: [f32x8; 2] = pulp::cast(*w);
        for (acc, &x) in acc.iter_mut().zip(x) {
            let x = simd.splat_f32x8(x);
            acc[0] = simd.mul_add_f32x8(x, w0, acc[0]);
            acc[1] = simd.mul_add_f32x8(x, w1, acc[1]);
        }
    }
    for (sum, acc) in sums.iter_mut().zip(&acc) {
        *sum = pulp::cast(*acc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random matrix with values in [-1, 1).
    fn matrix(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    fn naive(weight: &[f32], bias: &[f32], xs: &[f32], output: usize, input: usize) -> Vec<f32> {
        xs.chunks_exact(input)
            .flat_map(|x| {
                (0..output).map(move |o| {
                    let w = &weight[o * input..][..input];
                    x.iter().zip(w).map(|(x, w)| f64::from(x * w)).sum::<f64>() as f32 + bias[o]
                })
            })
            .collect()
    }

    fn close(a: &[f32], b: &[f32]) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{i}: {x} vs {y}");
        }
    }

    #[test]
    fn products_match_a_naive_loop_for_every_block_size() {
        // Outputs not a multiple of the panel, rows not a multiple of the block.
        for (output, input) in [(40, 33), (16, 8), (3, 5)] {
            let weight = matrix(output * input, 7);
            let bias = matrix(output, 11);
            let packed = Packed::new(&weight, output, input).unwrap_or_else(|| panic!());
            assert_eq!((packed.input, packed.output), (input, output));
            for rows in [1, 2, 5, 6, 7, 13, 20, 50, 100] {
                let xs = matrix(rows * input, 3 + rows as u64);
                let expected = naive(&weight, &bias, &xs, output, input);
                close(&packed.product(&xs, &bias), &expected);
                close(&packed.product_plain(&xs, &bias), &expected);
            }
        }
    }

    #[test]
    fn a_mismatched_weight_length_is_refused() {
        assert!(Packed::new(&[0.0; 10], 3, 3).is_none());
        assert!(Packed::new(&[], 0, 0).is_none());
    }
}
