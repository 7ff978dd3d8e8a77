//! [`EmbeddingModel`]: a BERT-family sentence-embedding model (such as
//! all-MiniLM-L6-v2) run on CPU with candle, loaded from a directory; nothing is
//! downloaded at run time.
//!
//! A text becomes one vector: the tokenizer's word pieces (at most
//! [`EmbeddingModel::MAX_TOKENS`]), the transformer's last hidden states, their mean over
//! the real (unpadded) tokens, scaled to unit length, as sentence-transformers computes
//! it. The dot product of two such vectors is their cosine similarity.
//!
//! The forward pass is this crate's own (`bert.rs`): a batch of one needs no attention
//! mask and the work between the matrix products is plain loops, and the linear layers'
//! weights are in a [`WeightFormat`]: [`EmbeddingModel::load`] quantises them to 8 bits
//! (`Q8_0`) where the CPU has candle's AVX-VNNI tiles, and keeps them f32 elsewhere,
//! multiplied by the crate's own product for a few rows (`product.rs`: weights packed
//! once at load, AVX2/FMA where the CPU has them). One short query embeds several times
//! faster than with candle's f32 `BertModel` on a VNNI CPU and about three times faster
//! on an AVX2-only one (`docs/benchmarks.md`), its vectors within a cosine of 0.99 of
//! that model's in either format (`tests/all/fast_embed.rs`). Vectors of different
//! [`variant`](EmbeddingModel::variant)s must not be mixed.
//!
//! The `Q8_0` products run on candle's own thread pool (`CANDLE_NUM_THREADS`, by
//! default one thread per core), which synchronises a few dozen times per query: on a
//! machine whose cores are busy with other work, `CANDLE_NUM_THREADS=1` gives steadier
//! (if slightly slower at best) query latency. The f32 products run on the calling
//! thread.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use crate::bert::{self, Bert};
use crate::config::check_model_dir;
use crate::error::{Error, Result};

/// The format of the linear layers' weights in [`EmbeddingModel`]'s forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightFormat {
    /// 8-bit GGML `Q8_0` blocks, quantised at load time: a quarter of the weight stream,
    /// and fast where candle multiplies them with AVX-VNNI tiles.
    Q8_0,
    /// The file's f32 weights as they are, packed for the crate's own product (the same
    /// vectors as candle's `BertModel`, up to rounding).
    F32,
}

impl WeightFormat {
    /// The faster format on this CPU: [`Q8_0`](Self::Q8_0) where candle has its AVX-VNNI
    /// tiles (AVX-512 VNNI or AVX-VNNI), else [`F32`](Self::F32) — measured on an AVX2-only
    /// CPU, candle's plain 8-bit dot products took 21 ms a query, several times the f32
    /// product's (`docs/benchmarks.md`).
    pub fn for_this_cpu() -> Self {
        if bert::has_vnni_tiles() {
            Self::Q8_0
        } else {
            Self::F32
        }
    }

    /// The name [`EmbeddingModel::variant`] reports: `"q8_0"` or `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Q8_0 => "q8_0",
            Self::F32 => "f32",
        }
    }
}

/// Texts run through the model together (sorted by length, so padding stays small).
const BATCH: usize = 16;

/// A sentence-embedding model loaded from a directory with `config.json` (a BERT
/// config), `tokenizer.json` and `model.safetensors`.
///
/// `Send + Sync`: one loaded model serves every search. Loading reads the weights into
/// memory (about 90 MB for all-MiniLM-L6-v2).
pub struct EmbeddingModel {
    model: Bert,
    format: WeightFormat,
    tokenizer: Tokenizer,
    dim: usize,
    dir: PathBuf,
    identity: String,
}

impl std::fmt::Debug for EmbeddingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingModel")
            .field("dir", &self.dir)
            .field("dim", &self.dim)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

fn load_error(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::ModelLoad {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

fn embedding_error(reason: impl std::fmt::Display) -> Error {
    Error::Embedding {
        reason: reason.to_string(),
    }
}

impl EmbeddingModel {
    /// Word pieces kept per text, `[CLS]` and `[SEP]` included; longer texts are cut.
    pub const MAX_TOKENS: usize = 128;

    /// Loads the model in `dir` onto the CPU, in the faster format for this CPU
    /// ([`WeightFormat::for_this_cpu`]).
    ///
    /// # Errors
    /// [`Error::ModelMissing`] (`MODEL_MISSING`) naming the first missing file;
    /// [`Error::ModelLoad`] (`MODEL_LOAD_FAILED`) when a file is not a valid config,
    /// tokenizer or safetensors file, or the weights do not fit the config.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        Self::load_with(dir, WeightFormat::for_this_cpu())
    }

    /// Loads the model in `dir` onto the CPU with its linear layers in `format`.
    ///
    /// # Errors
    /// As [`EmbeddingModel::load`].
    pub fn load_with(dir: impl AsRef<Path>, format: WeightFormat) -> Result<Self> {
        let dir = dir.as_ref();
        let [config_path, tokenizer_path, weights_path] = check_model_dir(dir)?;
        let config =
            std::fs::read_to_string(&config_path).map_err(|e| load_error(&config_path, e))?;
        let config: Config =
            serde_json::from_str(&config).map_err(|e| load_error(&config_path, e))?;
        let dim = config.hidden_size;
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| load_error(&tokenizer_path, e))?;
        // Padding is done per batch here; the file's own (often a fixed 128) is off.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: Self::MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| load_error(&tokenizer_path, e))?;
        let weights = std::fs::read(&weights_path).map_err(|e| load_error(&weights_path, e))?;
        let identity = identity(format, &config_path, &tokenizer_path, &weights)?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| load_error(&weights_path, e))?;
        let model = Bert::load(vb, &config, format).map_err(|e| load_error(&weights_path, e))?;
        Ok(Self {
            model,
            format,
            tokenizer,
            dim,
            dir: dir.to_owned(),
            identity,
        })
    }

    /// What a vector computed by this model depends on, as 64 hex digits: the sha256
    /// of the weight format ([`variant`](Self::variant)) and the bytes of the three
    /// model files. Two models with the same identity embed every text alike, so a
    /// vector cache on disk (`hybrid`'s) keys its vectors by it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The length of every vector [`embed`](Self::embed) returns (384 for MiniLM).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// What the vectors depend on besides the model files: the weight format of the
    /// forward pass (`"q8_0"` or `"f32"`, [`WeightFormat::name`]). A vector cache that
    /// persists across processes (such as the eval bench's) must key by it, so vectors
    /// of another variant are never mixed in.
    pub fn variant(&self) -> &'static str {
        self.format.name()
    }

    /// The format of the linear layers' weights.
    pub fn format(&self) -> WeightFormat {
        self.format
    }

    /// The directory the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// One unit-length vector per text, in input order. An empty text embeds the
    /// special tokens alone.
    ///
    /// # Errors
    /// [`Error::Embedding`] (`EMBEDDING_FAILED`) if tokenizing or running the model
    /// fails.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut encoded = Vec::with_capacity(texts.len());
        for (i, text) in texts.iter().enumerate() {
            let encoding = self
                .tokenizer
                .encode(*text, true)
                .map_err(embedding_error)?;
            encoded.push((i, encoding.get_ids().to_vec()));
        }
        // Shortest first: each batch pads to its own longest text.
        encoded.sort_by_key(|(_, ids)| ids.len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in encoded.chunks(BATCH) {
            let vectors = self.embed_batch(batch).map_err(embedding_error)?;
            for ((i, _), vector) in batch.iter().zip(vectors) {
                out[*i] = vector;
            }
        }
        Ok(out)
    }

    /// Runs one batch of token ids through the model: mean pooling over the real
    /// tokens, then L2 normalisation. A batch whose texts are all as long as each other
    /// (every batch of one) needs no padding, hence no attention mask.
    fn embed_batch(&self, batch: &[(usize, Vec<u32>)]) -> candle_core::Result<Vec<Vec<f32>>> {
        let width = batch
            .iter()
            .map(|(_, ids)| ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        let padded = batch.iter().any(|(_, tokens)| tokens.len() != width);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(if padded { batch.len() * width } else { 0 });
        for (_, tokens) in batch {
            ids.extend_from_slice(tokens);
            ids.resize(ids.len() + width - tokens.len(), 0);
            if padded {
                mask.resize(mask.len() + tokens.len(), 1u32);
                mask.resize(mask.len() + width - tokens.len(), 0);
            }
        }
        let mask = padded.then_some(mask.as_slice());
        let shape = (batch.len(), width);
        let hidden = self.model.forward(&ids, mask, shape)?;
        Ok(bert::pool(&hidden, self.model.hidden(), mask, shape))
    }
}

/// [`EmbeddingModel::identity`]: the sha256 of the variant and of each file's length and
/// bytes (the weights already read).
fn identity(
    format: WeightFormat,
    config: &Path,
    tokenizer: &Path,
    weights: &[u8],
) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(format.name().as_bytes());
    for path in [config, tokenizer] {
        let bytes = std::fs::read(path).map_err(|e| load_error(path, e))?;
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    hasher.update((weights.len() as u64).to_le_bytes());
    hasher.update(weights);
    Ok(crate::fetch::hex(&hasher.finalize()))
}

// `tool_search` shares one model across tasks.
const _: fn() = || {
    fn shareable<T: Send + Sync>() {}
    shareable::<EmbeddingModel>();
};
