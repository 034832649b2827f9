"""A plain numpy statement of the original BERT forward pass, for tests.

Written from the rules of the original model (not from its code):
  * embeddings: word + position + token-type, summed, then LayerNorm;
  * LayerNorm: (x - mean) / sqrt(var + 1e-12) * gamma + beta over the last axis;
  * each layer (post-LN): self-attention with per-head softmax of
    q.k / sqrt(head_size) + (1 - mask) * -10000, output dense, residual,
    LayerNorm; then dense(intermediate, gelu), dense(H), residual, LayerNorm;
  * gelu is the tanh approximation;
  * pooler: tanh(dense) of the first ([CLS]) position;
  * masked LM: gather positions, dense(H, gelu), LayerNorm, matmul with the
    transposed word embeddings, + output_bias, log_softmax;
  * NSP: pooled @ output_weights^T + output_bias, log_softmax (index 0 = B
    follows A).

Weights are a dict keyed by the original TF1 checkpoint variable names, with
the original shapes ([H, H] attention kernels, [2, H] NSP output_weights).
The export tests reuse `reference_forward` and `random_tf1_weights`.
"""

import numpy as np

EPS = 1e-12


def gelu(x):
  return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, gamma, beta):
  mean = x.mean(axis=-1, keepdims=True)
  var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
  return (x - mean) / np.sqrt(var + EPS) * gamma + beta


def log_softmax(x):
  x = x - x.max(axis=-1, keepdims=True)
  return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def softmax(x):
  return np.exp(log_softmax(x))


def dense(w, name, x):
  return x @ w[name + "/kernel"] + w[name + "/bias"]


def tf1_weight_shapes(config, position_rows=None):
  """Original TF1 variable name -> shape for a BertConfig (no optimizer slots)."""
  h, i = config.hidden_size, config.intermediate_size
  shapes = {
      "bert/embeddings/word_embeddings": (config.vocab_size, h),
      "bert/embeddings/token_type_embeddings": (config.type_vocab_size, h),
      "bert/embeddings/position_embeddings":
          (position_rows or config.max_position_embeddings, h),
      "bert/embeddings/LayerNorm/gamma": (h,),
      "bert/embeddings/LayerNorm/beta": (h,),
      "bert/pooler/dense/kernel": (h, h),
      "bert/pooler/dense/bias": (h,),
      "cls/predictions/transform/dense/kernel": (h, h),
      "cls/predictions/transform/dense/bias": (h,),
      "cls/predictions/transform/LayerNorm/gamma": (h,),
      "cls/predictions/transform/LayerNorm/beta": (h,),
      "cls/predictions/output_bias": (config.vocab_size,),
      "cls/seq_relationship/output_weights": (2, h),
      "cls/seq_relationship/output_bias": (2,),
  }
  for n in range(config.num_hidden_layers):
    p = f"bert/encoder/layer_{n}/"
    for name in ("query", "key", "value"):
      shapes[p + f"attention/self/{name}/kernel"] = (h, h)
      shapes[p + f"attention/self/{name}/bias"] = (h,)
    shapes[p + "attention/output/dense/kernel"] = (h, h)
    shapes[p + "attention/output/dense/bias"] = (h,)
    shapes[p + "intermediate/dense/kernel"] = (h, i)
    shapes[p + "intermediate/dense/bias"] = (i,)
    shapes[p + "output/dense/kernel"] = (i, h)
    shapes[p + "output/dense/bias"] = (h,)
    for ln in ("attention/output/LayerNorm", "output/LayerNorm"):
      shapes[p + ln + "/gamma"] = (h,)
      shapes[p + ln + "/beta"] = (h,)
  return shapes


def random_tf1_weights(config, rng, position_rows=None, scale=0.2):
  """Random float32 weights under the original names (non-trivial LayerNorms).

  Args:
    config: a BertConfig.
    rng: a numpy Generator.
    position_rows: rows of position_embeddings (default max_position_embeddings).
    scale: stddev of kernels, embeddings and biases.
  """
  return random_weights(tf1_weight_shapes(config, position_rows), rng, scale)


def random_weights(shapes, rng, scale=0.2):
  """Random float32 weights of the given {name: shape} (LayerNorm gammas near 1)."""
  weights = {}
  for name, shape in shapes.items():
    if name.endswith("/gamma"):
      value = 1.0 + 0.1 * rng.standard_normal(shape)
    else:
      value = scale * rng.standard_normal(shape)
    weights[name] = value.astype(np.float32)
  return weights


def reference_forward(w, config, input_ids, input_mask, segment_ids,
                      masked_lm_positions=None):
  """The original forward pass (inference: no dropout), in float64 numpy.

  Args:
    w: dict original name -> array (as `random_tf1_weights`).
    config: a BertConfig.
    input_ids, input_mask, segment_ids: int [batch, seq].
    masked_lm_positions: int [batch, preds] or None.

  Returns:
    dict of float64 arrays: sequence_output [b, s, H], pooled_output [b, H],
    nsp_log_probs [b, 2], and mlm_log_probs [b, p, vocab] when positions are
    given.
  """
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  input_ids = np.asarray(input_ids)
  b, s = input_ids.shape
  heads = config.num_attention_heads
  d = config.hidden_size // heads

  x = (w["bert/embeddings/word_embeddings"][input_ids] +
       w["bert/embeddings/token_type_embeddings"][np.asarray(segment_ids)] +
       w["bert/embeddings/position_embeddings"][:s][None])
  x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"],
                 w["bert/embeddings/LayerNorm/beta"])
  # [b, 1, 1, s]: padded keys get -10000 added to their logits.
  adder = (1.0 - np.asarray(input_mask, np.float64))[:, None, None, :] * -10000.0

  def split_heads(t):  # [b, s, H] -> [b, heads, s, d]
    return t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)

  for n in range(config.num_hidden_layers):
    p = f"bert/encoder/layer_{n}/"
    q = split_heads(dense(w, p + "attention/self/query", x))
    k = split_heads(dense(w, p + "attention/self/key", x))
    v = split_heads(dense(w, p + "attention/self/value", x))
    probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + adder)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, heads * d)
    attn = dense(w, p + "attention/output/dense", context)
    x = layer_norm(attn + x, w[p + "attention/output/LayerNorm/gamma"],
                   w[p + "attention/output/LayerNorm/beta"])
    inter = gelu(dense(w, p + "intermediate/dense", x))
    out = dense(w, p + "output/dense", inter)
    x = layer_norm(out + x, w[p + "output/LayerNorm/gamma"],
                   w[p + "output/LayerNorm/beta"])

  pooled = np.tanh(dense(w, "bert/pooler/dense", x[:, 0]))
  nsp_logits = (pooled @ w["cls/seq_relationship/output_weights"].T +
                w["cls/seq_relationship/output_bias"])
  result = {"sequence_output": x, "pooled_output": pooled,
            "nsp_log_probs": log_softmax(nsp_logits)}
  if masked_lm_positions is not None:
    pos = np.asarray(masked_lm_positions)
    gathered = np.take_along_axis(x, pos[:, :, None], axis=1)
    t = gelu(dense(w, "cls/predictions/transform/dense", gathered))
    t = layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"],
                   w["cls/predictions/transform/LayerNorm/beta"])
    logits = (t @ w["bert/embeddings/word_embeddings"].T +
              w["cls/predictions/output_bias"])
    result["mlm_log_probs"] = log_softmax(logits)
  return result
