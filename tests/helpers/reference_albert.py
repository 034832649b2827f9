"""A plain numpy statement of the original ALBERT forward pass, for tests.

Written from the rules of google-research/albert's model (not from its code):
  * embeddings of width E: word + position + token-type, summed, LayerNorm;
  * `embedding_hidden_mapping_in`: dense E -> H;
  * layer l (of num_hidden_layers) runs group g = int(l / layers * groups):
    for each inner block i of that group, in order, the post-LN block
    attention (heads of q.k / sqrt(d) + (1 - mask) * -10000), output dense,
    residual, LayerNorm; dense(intermediate, gelu), dense(H), residual,
    LayerNorm_1; the same weights each time the group is used;
  * pooler: tanh(dense) of [CLS];
  * masked LM: gather, dense(H -> E, gelu), LayerNorm, matmul with the
    transposed [vocab, E] word embeddings, + output_bias, log_softmax;
  * sentence order: pooled @ output_weights^T + output_bias, log_softmax.

Weights are a dict keyed by the original ALBERT TF1 variable names and shapes.
"""

import numpy as np

from helpers.reference_bert import dense, gelu, layer_norm, log_softmax, random_weights, softmax


def _layer_prefix(group, inner):
  return f"bert/encoder/transformer/group_{group}/inner_group_{inner}/"


def tf1_weight_shapes(config, position_rows=None):
  """Original ALBERT variable name -> shape for an ALBERT BertConfig."""
  e, h, i = config.embedding_size, config.hidden_size, config.intermediate_size
  shapes = {
      "bert/embeddings/word_embeddings": (config.vocab_size, e),
      "bert/embeddings/token_type_embeddings": (config.type_vocab_size, e),
      "bert/embeddings/position_embeddings":
          (position_rows or config.max_position_embeddings, e),
      "bert/embeddings/LayerNorm/gamma": (e,),
      "bert/embeddings/LayerNorm/beta": (e,),
      "bert/encoder/embedding_hidden_mapping_in/kernel": (e, h),
      "bert/encoder/embedding_hidden_mapping_in/bias": (h,),
      "bert/pooler/dense/kernel": (h, h),
      "bert/pooler/dense/bias": (h,),
      "cls/predictions/transform/dense/kernel": (h, e),
      "cls/predictions/transform/dense/bias": (e,),
      "cls/predictions/transform/LayerNorm/gamma": (e,),
      "cls/predictions/transform/LayerNorm/beta": (e,),
      "cls/predictions/output_bias": (config.vocab_size,),
      "cls/seq_relationship/output_weights": (2, h),
      "cls/seq_relationship/output_bias": (2,),
  }
  for g in range(config.albert_value("num_hidden_groups")):
    for inner in range(config.albert_value("inner_group_num")):
      p = _layer_prefix(g, inner)
      for name in ("query", "key", "value"):
        shapes[p + f"attention_1/self/{name}/kernel"] = (h, h)
        shapes[p + f"attention_1/self/{name}/bias"] = (h,)
      shapes[p + "attention_1/output/dense/kernel"] = (h, h)
      shapes[p + "attention_1/output/dense/bias"] = (h,)
      shapes[p + "ffn_1/intermediate/dense/kernel"] = (h, i)
      shapes[p + "ffn_1/intermediate/dense/bias"] = (i,)
      shapes[p + "ffn_1/intermediate/output/dense/kernel"] = (i, h)
      shapes[p + "ffn_1/intermediate/output/dense/bias"] = (h,)
      for ln in ("LayerNorm", "LayerNorm_1"):
        shapes[p + ln + "/gamma"] = (h,)
        shapes[p + ln + "/beta"] = (h,)
  return shapes


def random_tf1_weights(config, rng, position_rows=None, scale=0.2):
  """Random float32 weights under the original ALBERT names."""
  return random_weights(tf1_weight_shapes(config, position_rows), rng, scale)


def reference_forward(w, config, input_ids, input_mask, segment_ids,
                      masked_lm_positions=None):
  """The original ALBERT forward pass (no dropout), in float64 numpy.

  Returns:
    dict of float64 arrays: sequence_output [b, s, H], pooled_output [b, H],
    sop_log_probs [b, 2], and mlm_log_probs [b, p, vocab] with positions.
  """
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  input_ids = np.asarray(input_ids)
  b, s = input_ids.shape
  heads = config.num_attention_heads
  d = config.hidden_size // heads
  layers = config.num_hidden_layers
  groups = config.albert_value("num_hidden_groups")

  x = (w["bert/embeddings/word_embeddings"][input_ids] +
       w["bert/embeddings/token_type_embeddings"][np.asarray(segment_ids)] +
       w["bert/embeddings/position_embeddings"][:s][None])
  x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"],
                 w["bert/embeddings/LayerNorm/beta"])
  x = dense(w, "bert/encoder/embedding_hidden_mapping_in", x)
  adder = (1.0 - np.asarray(input_mask, np.float64))[:, None, None, :] * -10000.0

  def split_heads(t):
    return t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)

  for layer in range(layers):
    group = int(layer / layers * groups)
    for inner in range(config.albert_value("inner_group_num")):
      p = _layer_prefix(group, inner)
      q = split_heads(dense(w, p + "attention_1/self/query", x))
      k = split_heads(dense(w, p + "attention_1/self/key", x))
      v = split_heads(dense(w, p + "attention_1/self/value", x))
      probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d) + adder)
      context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, heads * d)
      attn = dense(w, p + "attention_1/output/dense", context)
      x = layer_norm(attn + x, w[p + "LayerNorm/gamma"], w[p + "LayerNorm/beta"])
      inter = gelu(dense(w, p + "ffn_1/intermediate/dense", x))
      out = dense(w, p + "ffn_1/intermediate/output/dense", inter)
      x = layer_norm(out + x, w[p + "LayerNorm_1/gamma"], w[p + "LayerNorm_1/beta"])

  pooled = np.tanh(dense(w, "bert/pooler/dense", x[:, 0]))
  sop_logits = (pooled @ w["cls/seq_relationship/output_weights"].T +
                w["cls/seq_relationship/output_bias"])
  result = {"sequence_output": x, "pooled_output": pooled,
            "sop_log_probs": log_softmax(sop_logits)}
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
