//! The BERT encoder [`EmbeddingModel`](crate::embed::EmbeddingModel) runs: the
//! embeddings and their LayerNorm, then per layer self-attention and the GELU
//! feed-forward block, each followed by a residual LayerNorm — the same computation as
//! candle's `BertModel`, arranged for one short query on a CPU:
//!
//! - with [`WeightFormat::Q8_0`] the linear layers' weights are quantised at load time to
//!   8 bits (GGML `Q8_0`: blocks of 32 weights sharing one f16 scale), so a forward pass
//!   streams about 11 MB of weights (about 14 MB where the inputs are padded, below)
//!   instead of 42 MB, and candle multiplies them with its integer kernels (AVX-VNNI
//!   tiles where the CPU has them, for which a 384-wide input is padded with zeros to
//!   512); each product quantises its input rows to 8 bits as well, as llama.cpp does.
//!   With [`WeightFormat::F32`] they stay f32, packed once at load for the crate's own
//!   product for a few rows (`product.rs`; on a CPU without VNNI tiles, candle's plain
//!   AVX2 8-bit dot products are slower than that). Everything else is f32 either way;
//! - query, key and value are one fused product, with the attention scale folded into
//!   the query weights; position and token-type embeddings are one precomputed table;
//! - between the four matrix products of a layer, the work on a few rows (attention,
//!   residual LayerNorms, GELU, bias) is plain loops over one buffer rather than a
//!   chain of small tensor operations, each of which would allocate and dispatch;
//! - a batch of one (every query) has no padding, so no attention mask.
//!
//! A layer whose input width is not a multiple of the 32-weight block keeps f32 weights.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};

use crate::embed::WeightFormat;
use crate::product::Packed;

/// Input widths the 8-bit kernel runs as fast tiles (candle's VNNI path) come in whole
/// super-blocks of 256.
const SUPER_BLOCK: usize = 256;

/// Whether candle multiplies `Q8_0` weights with its AVX-VNNI tiles (given an input width
/// of whole super-blocks); they are several times faster than its plain AVX2 dot
/// products, worth a third more work on a 384-wide input padded to 512.
pub(crate) fn has_vnni_tiles() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
            || (is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A linear layer `x · Wᵀ + b` over `Q8_0` (or, for [`WeightFormat::F32`] or an odd
/// width, f32) weights.
struct Linear {
    weight: Weight,
    bias: Vec<f32>,
    input: usize,
    /// Zero columns appended to the weights' input side, and so to every input row.
    pad: usize,
}

/// A linear layer's weights: `Q8_0` blocks that candle multiplies, or f32 packed for the
/// crate's own product (`product.rs`).
enum Weight {
    Q8_0(QMatMul),
    F32(Packed),
}

impl Linear {
    /// Quantises `weight` (`out × in`) for [`WeightFormat::Q8_0`] unless `in` is not a
    /// whole number of blocks.
    fn new(weight: Tensor, bias: Tensor, format: WeightFormat) -> Result<Self> {
        let (output, input) = weight.dims2()?;
        let bias = bias.to_vec1::<f32>()?;
        if bias.len() != output {
            candle_core::bail!("a bias of {} for {output} outputs", bias.len());
        }
        if format == WeightFormat::F32 || !input.is_multiple_of(GgmlDType::Q8_0.block_size()) {
            let values = weight.flatten_all()?.to_vec1::<f32>()?;
            let Some(packed) = Packed::new(&values, output, input) else {
                candle_core::bail!("a linear layer of {output} × {input} weights");
            };
            return Ok(Self {
                weight: Weight::F32(packed),
                bias,
                input,
                pad: 0,
            });
        }
        let pad = if has_vnni_tiles() {
            input.next_multiple_of(SUPER_BLOCK) - input
        } else {
            0
        };
        let weight = if pad > 0 {
            weight.pad_with_zeros(1, 0, pad)?
        } else {
            weight
        };
        Ok(Self {
            weight: Weight::Q8_0(QMatMul::from_qtensor(QTensor::quantize(
                &weight,
                GgmlDType::Q8_0,
            )?)?),
            bias,
            input,
            pad,
        })
    }

    fn load(
        vb: &VarBuilder<'_>,
        input: usize,
        output: usize,
        format: WeightFormat,
    ) -> Result<Self> {
        Self::new(
            vb.get((output, input), "weight")?,
            vb.get(output, "bias")?,
            format,
        )
    }

    /// `rows` rows of `xs` (each `input` wide) through the layer, bias added.
    fn forward(&self, xs: &[f32], rows: usize) -> Result<Vec<f32>> {
        let weight = match &self.weight {
            Weight::F32(packed) => return Ok(packed.product(xs, &self.bias)),
            Weight::Q8_0(weight) => weight,
        };
        let width = self.input + self.pad;
        let input = if self.pad > 0 {
            let mut padded = vec![0.0; rows * width];
            for (to, from) in padded
                .chunks_exact_mut(width)
                .zip(xs.chunks_exact(self.input))
            {
                to[..self.input].copy_from_slice(from);
            }
            padded
        } else {
            xs.to_vec()
        };
        let input = Tensor::from_vec(input, (rows, width), &Device::Cpu)?;
        let mut out = weight.forward(&input)?.flatten_all()?.to_vec1::<f32>()?;
        for row in out.chunks_exact_mut(self.bias.len()) {
            for (y, b) in row.iter_mut().zip(&self.bias) {
                *y += b;
            }
        }
        Ok(out)
    }
}

/// LayerNorm over each row.
struct LayerNorm {
    weight: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn load(vb: &VarBuilder<'_>, size: usize, eps: f64) -> Result<Self> {
        Ok(Self {
            weight: vb.get(size, "weight")?.to_vec1()?,
            bias: vb.get(size, "bias")?.to_vec1()?,
            eps: eps as f32,
        })
    }

    /// Normalises every row of `xs` in place.
    fn apply(&self, xs: &mut [f32]) {
        let n = self.weight.len() as f32;
        for row in xs.chunks_exact_mut(self.weight.len()) {
            let mean = sum_pairs(row, row, |x, _| x) / n;
            let var = sum_pairs(row, row, |x, _| (x - mean) * (x - mean)) / n;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((x, w), b) in row.iter_mut().zip(&self.weight).zip(&self.bias) {
                *x = (*x - mean) * scale * w + b;
            }
        }
    }

    /// `xs += residual`, then normalises each row.
    fn apply_residual(&self, xs: &mut [f32], residual: &[f32]) {
        for (x, r) in xs.iter_mut().zip(residual) {
            *x += r;
        }
        self.apply(xs);
    }
}

/// The error function, as a rational approximation accurate to a few f32 ulps (the
/// one Eigen and XLA use for f32): no branch, no `exp`, so loops over it vectorise.
/// (Plain multiply-adds: `mul_add` would be a library call on baseline x86-64.)
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p - 2.101_024e-6;
    p = x2 * p - 5.692_506_4e-5;
    p = x2 * p - 7.349_906_3e-4;
    p = x2 * p - 2.954_6e-3;
    p = x2 * p - 1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 - 2.133_740_6e-4;
    q = x2 * q - 1.682_827e-3;
    q = x2 * q - 7.373_329e-3;
    q = x2 * q - 1.426_474e-2;
    x * p / q
}

/// The activation in place.
fn activate(act: HiddenAct, xs: &mut [f32]) {
    match act {
        HiddenAct::Gelu => {
            for x in xs {
                *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
            }
        }
        HiddenAct::GeluApproximate => {
            // √(2/π)
            const C: f32 = 0.797_884_6;
            for x in xs {
                *x = 0.5 * *x * (1.0 + (C * (*x + 0.044_715 * *x * *x * *x)).tanh());
            }
        }
        HiddenAct::Relu => {
            for x in xs {
                *x = x.max(0.0);
            }
        }
    }
}

/// Lanes summed side by side: a float sum in one chain cannot be vectorised.
const LANES: usize = 8;

/// `Σ f(a[i], b[i])` over eight interleaved partial sums.
fn sum_pairs(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = [0.0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(&x, &y)| f(x, y))
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..LANES {
            acc[i] += f(x[i], y[i]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    sum_pairs(a, b, |x, y| x * y)
}

/// One transformer layer.
struct Layer {
    /// Query (pre-scaled by 1/√head size), key and value, stacked: `3·hidden × hidden`.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

impl Layer {
    fn load(vb: &VarBuilder<'_>, config: &Config, format: WeightFormat) -> Result<Self> {
        let hidden = config.hidden_size;
        let head = hidden / config.num_attention_heads;
        let attention = vb.pp("attention");
        let part = |name: &str| -> Result<(Tensor, Tensor)> {
            let vb = attention.pp("self").pp(name);
            Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
        };
        let scale = 1.0 / (head as f64).sqrt();
        let (query_w, query_b) = part("query")?;
        let (key_w, key_b) = part("key")?;
        let (value_w, value_b) = part("value")?;
        let qkv = Linear::new(
            Tensor::cat(&[(query_w * scale)?, key_w, value_w], 0)?,
            Tensor::cat(&[(query_b * scale)?, key_b, value_b], 0)?,
            format,
        )?;
        let output = attention.pp("output");
        let eps = config.layer_norm_eps;
        Ok(Self {
            qkv,
            attention_out: Linear::load(&output.pp("dense"), hidden, hidden, format)?,
            attention_norm: LayerNorm::load(&output.pp("LayerNorm"), hidden, eps)?,
            intermediate: Linear::load(
                &vb.pp("intermediate").pp("dense"),
                hidden,
                config.intermediate_size,
                format,
            )?,
            output: Linear::load(
                &vb.pp("output").pp("dense"),
                config.intermediate_size,
                hidden,
                format,
            )?,
            output_norm: LayerNorm::load(&vb.pp("output").pp("LayerNorm"), hidden, eps)?,
        })
    }
}

/// The encoder: embeddings, then the layers. `Send + Sync`, read-only after loading.
pub(crate) struct Bert {
    /// `vocabulary × hidden`.
    word_embeddings: Vec<f32>,
    /// Position embeddings plus the token-type-0 embedding (every text is one segment),
    /// `positions × hidden`.
    position_embeddings: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    activation: HiddenAct,
}

impl Bert {
    /// Loads the weights (`bert.`-prefixed or not); the linear layers' in `format`.
    pub(crate) fn load(vb: VarBuilder<'_>, config: &Config, format: WeightFormat) -> Result<Self> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let hidden = config.hidden_size;
        if config.num_attention_heads == 0 || !hidden.is_multiple_of(config.num_attention_heads) {
            candle_core::bail!(
                "hidden_size {hidden} is not a multiple of num_attention_heads {}",
                config.num_attention_heads
            );
        }
        let embeddings = vb.pp("embeddings");
        let word_embeddings = embeddings
            .pp("word_embeddings")
            .get((config.vocab_size, hidden), "weight")?;
        let positions = embeddings
            .pp("position_embeddings")
            .get((config.max_position_embeddings, hidden), "weight")?;
        let token_types = embeddings
            .pp("token_type_embeddings")
            .get((config.type_vocab_size, hidden), "weight")?;
        let position_embeddings = positions.broadcast_add(&token_types.narrow(0, 0, 1)?)?;
        let encoder = vb.pp("encoder");
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(&encoder.pp(format!("layer.{i}")), config, format))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            word_embeddings: word_embeddings.flatten_all()?.to_vec1()?,
            position_embeddings: position_embeddings.flatten_all()?.to_vec1()?,
            embedding_norm: LayerNorm::load(
                &embeddings.pp("LayerNorm"),
                hidden,
                config.layer_norm_eps,
            )?,
            layers,
            hidden,
            heads: config.num_attention_heads,
            activation: config.hidden_act,
        })
    }

    /// The last hidden states, `batch · width` rows of `hidden`, of `ids` (`batch ×
    /// width`, row-major). `mask` (same shape, 1 for a real token, 0 for padding) is
    /// `None` when nothing is padded.
    pub(crate) fn forward(
        &self,
        ids: &[u32],
        mask: Option<&[u32]>,
        (batch, width): (usize, usize),
    ) -> Result<Vec<f32>> {
        let hidden = self.hidden;
        let rows = batch * width;
        if ids.len() != rows {
            candle_core::bail!("{} ids for a {batch} × {width} batch", ids.len());
        }
        if let Some(m) = mask.filter(|m| m.len() != rows) {
            candle_core::bail!("a mask of {} for a {batch} × {width} batch", m.len());
        }
        if width * hidden > self.position_embeddings.len() {
            candle_core::bail!("{width} tokens, more than the model's positions");
        }
        let mut xs = vec![0.0; rows * hidden];
        for (row, (x, &id)) in xs.chunks_exact_mut(hidden).zip(ids).enumerate() {
            let Some(word) = self
                .word_embeddings
                .get(id as usize * hidden..(id as usize + 1) * hidden)
            else {
                candle_core::bail!("token id {id} is outside the vocabulary");
            };
            let position = &self.position_embeddings[(row % width) * hidden..][..hidden];
            for ((x, w), p) in x.iter_mut().zip(word).zip(position) {
                *x = w + p;
            }
        }
        self.embedding_norm.apply(&mut xs);
        for layer in &self.layers {
            xs = self.layer(layer, &xs, mask, (batch, width))?;
        }
        Ok(xs)
    }

    fn layer(
        &self,
        layer: &Layer,
        xs: &[f32],
        mask: Option<&[u32]>,
        (batch, width): (usize, usize),
    ) -> Result<Vec<f32>> {
        let rows = batch * width;
        let qkv = layer.qkv.forward(xs, rows)?;
        let context = self.attention(&qkv, mask, (batch, width));
        let mut attended = layer.attention_out.forward(&context, rows)?;
        layer.attention_norm.apply_residual(&mut attended, xs);
        let mut inner = layer.intermediate.forward(&attended, rows)?;
        activate(self.activation, &mut inner);
        let mut out = layer.output.forward(&inner, rows)?;
        layer.output_norm.apply_residual(&mut out, &attended);
        Ok(out)
    }

    /// Scaled dot-product attention per head over `qkv` (`batch · width` rows of query,
    /// key, value): each token attends to its own text's real tokens.
    fn attention(
        &self,
        qkv: &[f32],
        mask: Option<&[u32]>,
        (batch, width): (usize, usize),
    ) -> Vec<f32> {
        let hidden = self.hidden;
        let head = hidden / self.heads;
        let stride = 3 * hidden;
        let mut context = vec![0.0; batch * width * hidden];
        let mut scores = vec![0.0f32; width];
        let mut keys = Vec::with_capacity(width);
        for b in 0..batch {
            let text = &qkv[b * width * stride..(b + 1) * width * stride];
            keys.clear();
            keys.extend((0..width).filter(|&j| mask.is_none_or(|m| m[b * width + j] != 0)));
            if keys.is_empty() {
                // Nothing real (an empty encoding): attend to everything, as an additive
                // mask would.
                keys.extend(0..width);
            }
            let scores = &mut scores[..keys.len()];
            for h in 0..self.heads {
                let at = h * head;
                for i in 0..width {
                    let query = &text[i * stride + at..][..head];
                    let mut max = f32::NEG_INFINITY;
                    for (s, &j) in scores.iter_mut().zip(&keys) {
                        *s = dot(query, &text[j * stride + hidden + at..][..head]);
                        max = max.max(*s);
                    }
                    let mut sum = 0.0;
                    for s in scores.iter_mut() {
                        *s = (*s - max).exp();
                        sum += *s;
                    }
                    let out = &mut context[(b * width + i) * hidden + at..][..head];
                    for (&s, &j) in scores.iter().zip(&keys) {
                        let p = s / sum;
                        let value = &text[j * stride + 2 * hidden + at..][..head];
                        for (o, v) in out.iter_mut().zip(value) {
                            *o += p * v;
                        }
                    }
                }
            }
        }
        context
    }

    /// The width of a hidden state.
    pub(crate) fn hidden(&self) -> usize {
        self.hidden
    }
}

/// Mean of `hidden` (`batch · width` rows of `dim`) over each text's real tokens
/// (`mask`, or every token), scaled to unit length: one vector per text.
pub(crate) fn pool(
    hidden: &[f32],
    dim: usize,
    mask: Option<&[u32]>,
    (batch, width): (usize, usize),
) -> Vec<Vec<f32>> {
    (0..batch)
        .map(|b| {
            let mut mean = vec![0.0f32; dim];
            let mut count = 0usize;
            for i in 0..width {
                if mask.is_none_or(|m| m[b * width + i] != 0) {
                    count += 1;
                    let row = &hidden[(b * width + i) * dim..][..dim];
                    for (m, x) in mean.iter_mut().zip(row) {
                        *m += x;
                    }
                }
            }
            let count = count.max(1) as f32;
            let norm = (mean.iter().map(|x| x * x).sum::<f32>().sqrt() / count).max(1e-12);
            for m in &mut mean {
                *m = *m / count / norm;
            }
            mean
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_matches_candles_erf_gelu() {
        let xs: Vec<f32> = (-1000..=1000).map(|i| i as f32 / 100.0).collect();
        let expected = Tensor::new(xs.as_slice(), &Device::Cpu)
            .and_then(|t| t.gelu_erf())
            .and_then(|t| t.to_vec1::<f32>())
            .unwrap_or_default();
        let mut ours = xs.clone();
        activate(HiddenAct::Gelu, &mut ours);
        assert_eq!(expected.len(), ours.len());
        for ((x, e), o) in xs.iter().zip(&expected).zip(&ours) {
            assert!(
                (e - o).abs() <= 1e-6 * (1.0 + e.abs()),
                "gelu({x}): {o} vs {e}"
            );
        }
    }
}
