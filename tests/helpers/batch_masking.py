"""masking's vectorized draw (choose_masks_padded) for lists of sequences:
what the tests compare, sequence by sequence, with mask_tokens and the
padded functions the writer uses."""

from bert_tf.data.pretraining import masking


def mask_sequences(sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen):
  """`mask_tokens` for many sequences at once, the draws vectorized with numpy.

  Same rule and distribution as `mask_tokens` without whole-word masking:
  a uniform random subset of num_to_predict non-[CLS]/[SEP] positions, each
  independently 80% [MASK], 10% unchanged, 10% a uniform random id.

  Args:
    sequences: list of N lists of int ids, [CLS] A [SEP] B [SEP].
    masked_lm_prob, max_predictions_per_seq, vocab: as for mask_tokens.
    gen: numpy.random.Generator.
  Returns:
    list of N (output_tokens, positions, labels), as mask_tokens returns.
  """
  _, positions, labels, new, counts = choose_masks(
      sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen)
  results = []
  for tokens, pos, lab, new_ids, c in zip(sequences, positions.tolist(), labels.tolist(),
                                          new.tolist(), counts.tolist()):
    results.append((masking.apply_masks(tokens, pos[:c], new_ids[:c]), pos[:c], lab[:c]))
  return results


def choose_masks(sequences, masked_lm_prob, max_predictions_per_seq, vocab, gen):
  """The draw behind mask_sequences: the sequences padded into one array,
  then masking.choose_masks_padded.

  Returns:
    (tokens, positions, labels, new, counts): tokens int64 [N, L] padded
    input (L = longest sequence); positions, labels int64 [N, P] (P =
    max_predictions_per_seq; sorted positions first, then zeros); new int64
    [N, K] (K = counts.max()), the id that goes to each chosen position;
    counts int64 [N], the number of predictions of each sequence.
  """
  import numpy as np
  n = len(sequences)
  lengths = np.fromiter(map(len, sequences), np.int64, n)
  tokens = np.zeros((n, int(lengths.max())), np.int64)
  for i, seq in enumerate(sequences):
    tokens[i, :len(seq)] = seq
  return (tokens, *masking.choose_masks_padded(tokens, lengths, masked_lm_prob,
                                               max_predictions_per_seq, vocab, gen))
