"""Training FLOPs of one pretraining step: the compute model behind
`compare_objectives --budget=flops` (through each objective's
`train_flops`) and the benchmarks' MFU.

What is counted: matrix multiplies, 2 FLOPs per multiply-add, and a
training step as 3 x the forward pass (the backward pass computes the
gradients of the inputs and of the weights, each as costly as the forward).
Biases and LayerNorm scales count as weights (one multiply-add per token
each), as in the usual "6 x parameters x tokens" rule. Not counted:
softmaxes, activations, dropout, embedding look-ups, sampling, the loss and
the optimizer update (elementwise, or per step rather than per token).

Notation: L layers, H hidden, I intermediate, S tokens per sequence (all of
them, padding included: the encoder computes every position), E the
embedding width (H for BERT; ALBERT's `embedding_size`), V the vocab size,
P = max_predictions_per_seq (the masked-LM head runs at every prediction
slot of the records, padding slots too), B the batch size.

  encoder, per token   6 x L x W(H, I) + 12 x L x S x H  [+ 6 x (E x H + H)]
      W(H, I) = 4H^2 + 4H (query, key, value, output and their biases)
              + 2HI + I + H (feed-forward) + 4H (two LayerNorms),
      so 6 x L x W is 6 x the encoder's non-embedding parameters (BERT);
      12 x L x S x H is attention itself: Q K^T and softmax x V, 2 x S x H
      FLOPs each per token and layer in the forward, x 3;
      the bracket: the projection of E-wide embeddings to H, when E != H.
      ALBERT shares layers but computes every one: L x inner_group_num
      layers are counted.
  masked-LM head, per prediction   6 x (H E + E + 2E + E V + V)
      dense H -> E, LayerNorm, logits against the tied word embeddings
      (E x V) and their bias.
  sentence-pair head (NSP, SOP), per sequence   6 x (H^2 + H + 2H + 2)
      the pooler H -> H on [CLS] and the 2-way dense.
  replaced-token head (ELECTRA), per token   6 x (H^2 + H + H + 1)
      dense H -> H and dense H -> 1.

  BERT step     B x (S x encoder + P x masked-LM head [+ sentence head])
  ELECTRA step  B x (S x discriminator encoder + S x replaced-token head
                     + S x generator encoder (its own L, H, I; projected
                       from the shared E-wide embeddings when E != H_gen)
                     + P x generator masked-LM head (H_gen -> E, E x V))
      The discriminator's pooler, which keras-hub computes and no loss
      reads, is not counted (2 H^2 per sequence, forward only).
  ELECTRA 15%   ELECTRA's step (only its loss is restricted)
  Replace MLM   B x (S x main encoder + P x main masked-LM head (H -> E, E x V)
                     + S x generator encoder + P x generator masked-LM head)
  All-Tokens MLM  Replace MLM's with the main masked-LM head at all S
                  tokens and the copy layer, 6 x (H + 1) per token
  distillation step  the student's BERT step + the teacher's forward pass
                     (1/3 of its BERT step: no backward through the teacher)
"""

from bert_tf.models.config import BertConfig


def layer_weights(hidden, intermediate):
  """Weights of one transformer layer, W(H, I) above (int)."""
  h, i = hidden, intermediate
  return (4 * h * h + 4 * h) + (2 * h * i + i + h) + 4 * h


def num_layers_computed(config: BertConfig):
  """Layers the forward runs: num_hidden_layers, times ALBERT's
  inner_group_num (shared weights are still computed each time)."""
  inner = config.albert_value("inner_group_num") if config.is_albert else 1
  return config.num_hidden_layers * int(inner)


def embedding_width(config: BertConfig):
  """E: ALBERT's embedding_size, else the hidden size."""
  return config.embedding_size if config.is_albert else config.hidden_size


def encoder_flops_per_token(config: BertConfig, seq_length, width=None):
  """Training FLOPs per token of the encoder of `config` over sequences of
  `seq_length` tokens reading `width`-wide embeddings (default
  `embedding_width(config)`): see the module docstring (int)."""
  h, layers = config.hidden_size, num_layers_computed(config)
  width = embedding_width(config) if width is None else width
  projection = width * h + h if width != h else 0
  return (6 * layers * layer_weights(h, config.intermediate_size)
          + 12 * layers * seq_length * h + 6 * projection)


def mlm_head_flops(hidden, width, vocab_size):
  """Training FLOPs of the masked-LM head at one prediction (int)."""
  return 6 * (hidden * width + width + 2 * width + width * vocab_size + vocab_size)


def sentence_head_flops(hidden):
  """Training FLOPs of the pooler and the 2-way sentence-pair head, per
  sequence (int)."""
  return 6 * (hidden * hidden + hidden + 2 * hidden + 2)


def replaced_token_head_flops(hidden):
  """Training FLOPs of ELECTRA's discriminator head, per token (int)."""
  return 6 * (hidden * hidden + hidden + hidden + 1)


def bert_step_flops(config: BertConfig, batch_size, seq_length, predictions_per_seq,
                    sentence_head=True):
  """Training FLOPs of one step of BERT's (or RoBERTa's, ALBERT's)
  pretrainer on a batch of `batch_size` x `seq_length` tokens with
  `predictions_per_seq` masked-LM slots per sequence (int)."""
  per_sequence = (seq_length * encoder_flops_per_token(config, seq_length)
                  + predictions_per_seq * mlm_head_flops(
                      config.hidden_size, embedding_width(config), config.vocab_size))
  if sentence_head:
    per_sequence += sentence_head_flops(config.hidden_size)
  return batch_size * per_sequence


def electra_step_flops(config: BertConfig, generator_config: BertConfig, batch_size,
                       seq_length, predictions_per_seq, width):
  """Training FLOPs of one ELECTRA step: the discriminator (`config`) and
  its head over every token, the generator (`generator_config`) over every
  token and its masked-LM head at the prediction slots; `width` is the
  shared embeddings' width (int)."""
  per_token = (encoder_flops_per_token(config, seq_length, width)
               + replaced_token_head_flops(config.hidden_size)
               + encoder_flops_per_token(generator_config, seq_length, width))
  per_sequence = (seq_length * per_token + predictions_per_seq * mlm_head_flops(
      generator_config.hidden_size, width, config.vocab_size))
  return batch_size * per_sequence


def electra_mlm_step_flops(config: BertConfig, generator_config: BertConfig, batch_size,
                           seq_length, predictions_per_seq, width, all_tokens=False):
  """Training FLOPs of one Replace MLM step (`all_tokens`: All-Tokens MLM):
  the main encoder and the generator over every token, the generator's
  masked-LM head at the prediction slots and the main one at the slots or,
  for All-Tokens MLM, at every token with the copy layer (int)."""
  per_token = (encoder_flops_per_token(config, seq_length, width)
               + encoder_flops_per_token(generator_config, seq_length, width))
  main_head = mlm_head_flops(config.hidden_size, width, config.vocab_size)
  if all_tokens:
    per_token += main_head + 6 * (config.hidden_size + 1)
  per_sequence = (seq_length * per_token + predictions_per_seq * mlm_head_flops(
      generator_config.hidden_size, width, config.vocab_size))
  if not all_tokens:
    per_sequence += predictions_per_seq * main_head
  return batch_size * per_sequence


def distillation_step_flops(student_config: BertConfig, teacher_config: BertConfig, batch_size,
                            seq_length, predictions_per_seq, sentence_head=False):
  """Training FLOPs of one distillation step: the student's BERT step (with
  or without its sentence-pair head) and the frozen teacher's forward pass,
  its masked-LM head included (int)."""
  teacher_forward = bert_step_flops(teacher_config, batch_size, seq_length,
                                    predictions_per_seq, sentence_head=False) // 3
  return teacher_forward + bert_step_flops(student_config, batch_size, seq_length,
                                           predictions_per_seq, sentence_head=sentence_head)
