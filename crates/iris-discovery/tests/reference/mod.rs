//! The f32 reference the fast embedding path is checked and timed against: candle's own
//! `BertModel` over the unquantised weights, with the tokenizer settings, batching,
//! attention mask and pooling `EmbeddingModel` used before it ran its own forward pass.
//! Shared by the `fast_embed` tests and the `embed` bench.
#![allow(dead_code, unreachable_pub)] // Each user takes a different subset.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// Word pieces kept per text, as `EmbeddingModel::MAX_TOKENS`.
const MAX_TOKENS: usize = 128;
/// Texts run through the model together, sorted by length.
const BATCH: usize = 16;

/// candle's f32 `BertModel` and the tokenizer, loaded from a model directory.
pub struct ReferenceModel {
    model: BertModel,
    tokenizer: Tokenizer,
}

impl ReferenceModel {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `dir`.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let config = std::fs::read_to_string(dir.join("config.json")).map_err(|e| e.to_string())?;
        let config: Config = serde_json::from_str(&config).map_err(|e| e.to_string())?;
        let mut tokenizer =
            Tokenizer::from_file(dir.join("tokenizer.json")).map_err(|e| e.to_string())?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| e.to_string())?;
        let weights = std::fs::read(dir.join("model.safetensors")).map_err(|e| e.to_string())?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| e.to_string())?;
        let model = BertModel::load(vb, &config).map_err(|e| e.to_string())?;
        Ok(Self { model, tokenizer })
    }

    /// The word-piece ids of `text` (`[CLS]` and `[SEP]` included).
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>, String> {
        self.tokenizer
            .encode(text, true)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }

    /// One unit-length vector per text, in input order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let mut encoded: Vec<(usize, Vec<u32>)> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| Ok((i, self.tokenize(text)?)))
            .collect::<Result<_, String>>()?;
        encoded.sort_by_key(|(_, ids)| ids.len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in encoded.chunks(BATCH) {
            let vectors = self.embed_batch(batch).map_err(|e| e.to_string())?;
            for ((i, _), vector) in batch.iter().zip(vectors) {
                out[*i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, batch: &[(usize, Vec<u32>)]) -> candle_core::Result<Vec<Vec<f32>>> {
        let width = batch
            .iter()
            .map(|(_, ids)| ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for (_, tokens) in batch {
            ids.extend_from_slice(tokens);
            ids.resize(ids.len() + width - tokens.len(), 0);
            mask.resize(mask.len() + tokens.len(), 1u32);
            mask.resize(mask.len() + width - tokens.len(), 0);
        }
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let weights = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&weights)?.sum(1)?;
        let counts = weights.sum(1)?.clamp(1.0, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

/// The cosine of two unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
