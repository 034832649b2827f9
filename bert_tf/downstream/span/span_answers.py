"""From start/end logits to answer texts, as google-research/bert's run_squad.

For each example, over all of its windows (data.squad features):
- candidate spans pair the `n_best_size` highest start logits with the
  `n_best_size` highest end logits of a window (ties: the earlier position);
  a span is kept when both ends are document pieces, its start is in the
  window that gives it the most context, end >= start, and it is at most
  `max_answer_length` pieces long;
- SQuAD 2.0: the null answer's score is the lowest start[0] + end[0] over
  the windows, and it is a candidate too;
- candidates are ranked by start + end logit; each becomes text (`final_text`:
  the pieces joined without "##", aligned back onto the original words so
  that case, accents and punctuation come from the context; SentencePiece
  pieces: `sentencepiece_final_text`, the same alignment after ALBERT's
  normalization) and the first
  `n_best_size` distinct texts are the n-best list, with softmax
  probabilities over their scores (2.0: "" is added when missing; none at
  all: "empty" with logits 0);
- the prediction is the first n-best text; for 2.0 it is "" when the null
  score minus the best non-null score exceeds `null_score_diff_threshold`
  (that difference is `null_odds`). A 2.0 example with no non-null span at
  all is predicted "" with the null score as its difference (the original
  stops with an error there).
"""

import collections
import dataclasses
import functools
import json
import math
import os

import numpy as np

from bert_tf.io import file_io as files
from bert_tf.data.tokenizers import sentencepiece_vocab
from bert_tf.downstream.span import squad


@dataclasses.dataclass(frozen=True)
class RawResult:
  """The model's logits for one feature (lists of float, one per position)."""
  unique_id: int
  start_logits: list
  end_logits: list


def best_indexes(logits, n):
  """Positions of the n largest logits, largest first (ties: lower position)."""
  return np.argsort(-np.asarray(logits, np.float64), kind="stable")[:n].tolist()


def softmax(scores):
  if not scores:
    return []
  top = max(scores)
  exps = [math.exp(s - top) for s in scores]
  total = sum(exps)
  return [e / total for e in exps]


def _spaces_before(text):
  """[number of " " before each index of text] (an index's place once the
  spaces are removed, for the indexes that are not a space)."""
  out, spaces = [], 0
  for ch in text:
    out.append(spaces)
    spaces += ch == " "
  return out


@functools.lru_cache(maxsize=65536)
def _basic_words(word, do_lower_case):
  """squad.basic_tokenize of one word (cached: the candidates of an
  example share their words)."""
  return tuple(squad.basic_tokenize(word, do_lower_case))


def final_text(pred_text, orig_text, do_lower_case):
  """The part of `orig_text` (original words) that `pred_text` (joined
  pieces, normalized) spells, found through a character alignment of the
  two once spaces are removed; `orig_text` whole when they do not align.
  basic_tokenize works a word at a time (" " ends a word), so orig_text's
  words are tokenized apart, each once."""
  basic = " ".join(t for word in orig_text.split(" ") for t in _basic_words(word, do_lower_case))
  start = basic.find(pred_text) if pred_text else -1
  if start == -1:
    return orig_text
  end = start + len(pred_text) - 1
  orig_kept = [i for i, ch in enumerate(orig_text) if ch != " "]
  if len(orig_kept) != len(basic) - basic.count(" "):
    return orig_text
  if basic[start] == " " or basic[end] == " ":
    return orig_text
  before = _spaces_before(basic[:end + 1])
  return orig_text[orig_kept[start - before[start]]:orig_kept[end - before[end]] + 1]


def sentencepiece_text(pieces):
  """SentencePiece pieces as text: joined, "▁" as a space, white space runs
  to one space, stripped ("▁jerusalem" "," -> "jerusalem,")."""
  return " ".join("".join(pieces).replace(sentencepiece_vocab.WORD_START, " ").split())


def sentencepiece_final_text(pred_text, orig_text, do_lower_case):
  """final_text for SentencePiece models (ALBERT's): the part of `orig_text`
  (original words) that `pred_text` (sentencepiece_text of the predicted
  pieces) spells, in the original characters (casing, accents). orig_text
  is normalized as ALBERT's preprocess_text does (white space runs to one
  space, NFKD without combining marks, lower-cased with do_lower_case) one
  character at a time, so each normalized character knows the original one
  it came from; `orig_text` whole when pred_text is not found there (e.g. a
  span with an unknown piece, "<unk>")."""
  normalized, source = [], []
  for i, ch in enumerate(orig_text):
    if ch.isspace():
      if normalized and normalized[-1] != " ":
        normalized.append(" ")
        source.append(i)
      continue
    for out in sentencepiece_vocab.preprocess_text(ch, do_lower_case):
      normalized.append(out)
      source.append(i)
  start = "".join(normalized).find(pred_text) if pred_text else -1
  if start == -1:
    return orig_text
  return orig_text[source[start]:source[start + len(pred_text) - 1] + 1]


_Candidate = collections.namedtuple("_Candidate", "feature start end start_logit end_logit")
_Entry = collections.namedtuple("_Entry", "text start_logit end_logit")


def _candidates(features, results, n_best_size, max_answer_length):
  """Valid spans of every window, and the null (score, candidate)."""
  spans, null = [], None
  for index, feature in enumerate(features):
    result = results[feature.unique_id]
    starts, ends = result.start_logits, result.end_logits
    score = starts[0] + ends[0]
    if null is None or score < null[0]:
      null = (score, _Candidate(index, 0, 0, starts[0], ends[0]))
    # Every (start, end) pair of the n best of each at once, in the order
    # of the original's two loops (start-major): the checks on one end are
    # made once per position, those on the pair over the whole grid.
    best_starts = best_indexes(starts, n_best_size)
    best_ends = best_indexes(ends, n_best_size)
    size, in_map = len(feature.tokens), feature.token_to_orig_map
    start_ok = np.array([s < size and s in in_map and bool(feature.token_is_max_context.get(s))
                         for s in best_starts], bool)
    end_ok = np.array([e < size and e in in_map for e in best_ends], bool)
    s_grid, e_grid = np.array(best_starts, int)[:, None], np.array(best_ends, int)[None, :]
    valid = (start_ok[:, None] & end_ok[None, :] & (e_grid >= s_grid)
             & (e_grid - s_grid + 1 <= max_answer_length))
    for i, j in zip(*np.nonzero(valid)):
      s, e = best_starts[i], best_ends[j]
      spans.append(_Candidate(index, s, e, starts[s], ends[e]))
  return spans, null


def _span_text(example, feature, candidate, do_lower_case, sentencepiece=False):
  tokens = feature.tokens[candidate.start:candidate.end + 1]
  first = feature.token_to_orig_map[candidate.start]
  last = feature.token_to_orig_map[candidate.end]
  orig_text = " ".join(example.doc_tokens[first:last + 1])
  if sentencepiece:
    return sentencepiece_final_text(sentencepiece_text(tokens), orig_text, do_lower_case)
  pieces = " ".join(" ".join(tokens).replace(" ##", "").replace("##", "").split())
  return final_text(pieces, orig_text, do_lower_case)


def decode_example(example, features, results, n_best_size, max_answer_length,
                   do_lower_case, version_2_with_negative, sentencepiece=False):
  """(n-best list of (text, start_logit, end_logit), null score or None)."""
  spans, null = _candidates(features, results, n_best_size, max_answer_length)
  if version_2_with_negative:
    spans.append(null[1])
  spans.sort(key=lambda c: c.start_logit + c.end_logit, reverse=True)
  seen, nbest = set(), []
  for candidate in spans:
    if len(nbest) >= n_best_size:
      break
    if candidate.start > 0:
      text = _span_text(example, features[candidate.feature], candidate, do_lower_case,
                        sentencepiece)
      if text in seen:
        continue
    else:
      text = ""
    seen.add(text)
    nbest.append(_Entry(text, candidate.start_logit, candidate.end_logit))
  if version_2_with_negative and "" not in seen:
    nbest.append(_Entry("", null[1].start_logit, null[1].end_logit))
  if not nbest:
    nbest.append(_Entry("empty", 0.0, 0.0))
  return nbest, (null[0] if version_2_with_negative else None)


def decode(examples, features, results, n_best_size=20, max_answer_length=30,
           do_lower_case=True, version_2_with_negative=False, null_score_diff_threshold=0.0,
           sentencepiece=False):
  """Answers for every example.

  Args:
    examples: data.squad.SquadExamples; features: their SpanFeatures.
    results: RawResults (any order), one per feature.
    sentencepiece: the features' tokens are SentencePiece pieces (an ALBERT
      model's): answers by sentencepiece_final_text.

  Returns:
    (predictions, nbest, null_odds): OrderedDicts keyed by question id in
    example order: the answer text; a list of {text, probability,
    start_logit, end_logit}; the null score minus the best non-null score
    (2.0 only, else empty).
  """
  by_id = {r.unique_id: r for r in results}
  by_example = collections.defaultdict(list)
  for feature in features:
    by_example[feature.example_index].append(feature)
  predictions, all_nbest = collections.OrderedDict(), collections.OrderedDict()
  null_odds = collections.OrderedDict()
  for index, example in enumerate(examples):
    nbest, null_score = decode_example(example, by_example[index], by_id, n_best_size,
                                       max_answer_length, do_lower_case,
                                       version_2_with_negative, sentencepiece)
    probs = softmax([e.start_logit + e.end_logit for e in nbest])
    all_nbest[example.qas_id] = [
        collections.OrderedDict(text=e.text, probability=p, start_logit=e.start_logit,
                                end_logit=e.end_logit) for e, p in zip(nbest, probs)]
    if not version_2_with_negative:
      predictions[example.qas_id] = nbest[0].text
      continue
    best = next((e for e in nbest if e.text), None)
    diff = null_score - (best.start_logit + best.end_logit if best else 0.0)
    null_odds[example.qas_id] = diff
    predictions[example.qas_id] = "" if best is None or diff > null_score_diff_threshold \
        else best.text
  return predictions, all_nbest, null_odds


PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"


def write_predictions(output_dir, predictions, nbest, null_odds, version_2_with_negative):
  """predictions.json, nbest_predictions.json (and null_odds.json for 2.0)
  in output_dir, JSON as the original writes it (indent 4, ASCII escapes),
  each atomically. Returns the paths written."""
  outputs = [(PREDICTIONS_FILE, predictions), (NBEST_FILE, nbest)]
  if version_2_with_negative:
    outputs.append((NULL_ODDS_FILE, null_odds))
  paths = []
  for name, value in outputs:
    path = os.path.join(output_dir, name)
    files.atomic_write(path, json.dumps(value, indent=4) + "\n")
    paths.append(path)
  return paths
