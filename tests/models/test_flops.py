"""Tests of bert_tf.models.flops and the objectives' train_flops: the
FLOPs of a tiny config counted by hand, and the weight counts of the
formula against the layers the models really build."""

from bert_tf.models import electra
from bert_tf.models import flops
from bert_tf.models import modeling
from bert_tf.models.config import BertConfig
from bert_tf.training import objectives

# H=16, L=1, I=32, V=100; batch 8 x 32 tokens, 5 prediction slots each.
TINY = BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=32)
B, S, P = 8, 32, 5

# By hand. One layer: attention 4*16*16 + 4*16 = 1088, feed-forward
# 2*16*32 + 32 + 16 = 1072, LayerNorms 4*16 = 64: 2224 weights.
LAYER = 2224
ENCODER_PER_TOKEN = 6 * LAYER + 12 * 1 * 32 * 16  # 13344 + 6144 (attention) = 19488
MLM_HEAD = 6 * (16 * 16 + 16 + 2 * 16 + 16 * 100 + 100)  # 12024 per prediction
SENTENCE_HEAD = 6 * (16 * 16 + 16 + 2 * 16 + 2)  # 1836 per sequence
BERT_STEP = B * (S * ENCODER_PER_TOKEN + P * MLM_HEAD + SENTENCE_HEAD)  # 5,484,576

# ELECTRA's generator at 1/4 width: hidden 4, 1 head, intermediate 8, one
# layer: 4*4*4 + 16 + 2*4*8 + 8 + 4 + 16 = 172 weights; it reads the
# 16-wide shared embeddings through a 16 -> 4 projection (68 weights).
GENERATOR_PER_TOKEN = 6 * 172 + 12 * 1 * 32 * 4 + 6 * (16 * 4 + 4)  # 1032 + 1536 + 408
DISCRIMINATOR_HEAD = 6 * (16 * 16 + 16 + 16 + 1)  # 1734 per token
GENERATOR_MLM_HEAD = 6 * (4 * 16 + 16 + 2 * 16 + 16 * 100 + 100)  # 10872 per prediction
ELECTRA_STEP = B * (S * (ENCODER_PER_TOKEN + DISCRIMINATOR_HEAD + GENERATOR_PER_TOKEN)
                    + P * GENERATOR_MLM_HEAD)  # 6,629,568


def test_tiny_config_counted_by_hand():
  assert flops.layer_weights(16, 32) == LAYER
  assert flops.encoder_flops_per_token(TINY, S) == ENCODER_PER_TOKEN == 19488
  assert flops.bert_step_flops(TINY, B, S, P) == BERT_STEP == 5_484_576
  assert flops.bert_step_flops(TINY, B, S, P, sentence_head=False) == BERT_STEP - B * 1836


def test_distillation_step_is_the_student_step_and_a_third_of_the_teachers():
  import dataclasses  # pylint: disable=g-import-not-at-top
  teacher = dataclasses.replace(TINY, num_hidden_layers=2)
  # The teacher's forward: 2 layers of encoder and its masked-LM head, once.
  teacher_forward = B * (S * 2 * ENCODER_PER_TOKEN + P * MLM_HEAD) // 3
  student_step = BERT_STEP - B * SENTENCE_HEAD
  assert flops.distillation_step_flops(TINY, teacher, B, S, P) == student_step + teacher_forward
  assert flops.distillation_step_flops(TINY, teacher, B, S, P, sentence_head=True) == (
      BERT_STEP + teacher_forward)


def test_objectives_train_flops_count_every_network_they_train():
  assert objectives.OBJECTIVES["mlm_nsp"].train_flops(TINY, B, S, P) == BERT_STEP
  assert objectives.OBJECTIVES["mlm_sop"].train_flops(TINY, B, S, P) == BERT_STEP
  assert objectives.OBJECTIVES["mlm"].train_flops(TINY, B, S, P) == BERT_STEP - B * 1836
  # The generator (encoder, projection and masked-LM head) and the
  # discriminator's per-token head are all in ELECTRA's step.
  assert objectives.OBJECTIVES["electra"].train_flops(TINY, B, S, P) == ELECTRA_STEP
  assert ELECTRA_STEP == 6_629_568


def test_formula_weights_are_the_built_layers():
  model = modeling.BertPretrainer(TINY)
  assert model.encoder.transformer_layers[0].count_params() == flops.layer_weights(16, 32)
  # The masked-LM head: dense, LayerNorm, the tied word embedding (E x V,
  # which keras counts with the head) and the output bias.
  assert model.mlm_head.count_params() * 6 == MLM_HEAD
  assert model.encoder.get_layer("pooled_dense").count_params() + model.nsp_head.count_params() \
      == 16 * 16 + 16 + 2 * 16 + 2
  pretrainer = electra.ElectraPretrainer(TINY, mask_token_id=3)
  gen = pretrainer.generator_config
  assert (gen.hidden_size, gen.intermediate_size, gen.num_hidden_layers) == (4, 8, 1)
  assert pretrainer.generator_layers[0].count_params() == flops.layer_weights(4, 8) == 172
  assert pretrainer.generator_projection.count_params() == 16 * 4 + 4
  assert pretrainer.mlm_head.count_params() * 6 == GENERATOR_MLM_HEAD
  assert (pretrainer.discriminator_dense.count_params()
          + pretrainer.discriminator_output.count_params()) == 16 * 16 + 16 + 16 + 1


def test_albert_counts_every_shared_layer_and_the_embedding_projection():
  albert = TINY.replace(embedding_size=8, num_hidden_layers=3)
  per_token = 3 * (6 * LAYER + 12 * 32 * 16) + 6 * (8 * 16 + 16)
  assert flops.encoder_flops_per_token(albert, S) == per_token
  # Its masked-LM head maps H -> E = 8 and takes logits against 8-wide embeddings.
  assert flops.mlm_head_flops(16, 8, 100) == 6 * (16 * 8 + 8 + 16 + 800 + 100)
