"""Exact match and F1 as the official SQuAD evaluation scripts count them.

An answer is normalized (lower-cased; ASCII punctuation `string.punctuation`
removed; the words a, an, the removed; whitespace collapsed), then:
- exact match: the normalized texts are equal;
- F1: over the normalized words (a multiset overlap), precision and recall
  of the prediction against one gold answer;
each the maximum over the question's gold answers, then averaged x 100.

v1.1 (`evaluate_v1`): every question counts; one without a prediction
scores 0. Its F1 of an empty prediction or gold is 0.

v2.0 (`evaluate_v2`): gold answers that normalize to nothing are dropped,
and a question left without any has the single gold answer "" (so
predicting "" is the right answer to an unanswerable question; F1 is 1 when
both are empty, 0 when only one is). Results also over the answerable
(HasAns_*) and unanswerable (NoAns_*) questions; with `na_probs` (the
null_odds of run_squad), the best threshold: questions sorted by their
value, predicting "" for all above a threshold, the best score
(best_exact, best_f1) and the value it is reached at (*_thresh).
"""

import collections
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
  text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
  return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(gold, prediction):
  return int(normalize_answer(gold) == normalize_answer(prediction))


def _overlap_f1(gold_words, predicted_words):
  same = sum((collections.Counter(gold_words) & collections.Counter(predicted_words)).values())
  if same == 0:
    return 0.0
  precision, recall = same / len(predicted_words), same / len(gold_words)
  return 2 * precision * recall / (precision + recall)


def f1_v1(gold, prediction):
  return _overlap_f1(normalize_answer(gold).split(), normalize_answer(prediction).split())


def f1_v2(gold, prediction):
  gold_words = normalize_answer(gold).split() if gold else []
  predicted_words = normalize_answer(prediction).split() if prediction else []
  if not gold_words or not predicted_words:
    return float(gold_words == predicted_words)
  return _overlap_f1(gold_words, predicted_words)


def questions(dataset):
  """(question id, [gold answer texts]) of a SQuAD JSON's `data`, in order."""
  for article in dataset:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        yield qa["id"], [a["text"] for a in qa.get("answers") or []]


def evaluate_v1(dataset, predictions):
  """{exact_match, f1} (percent) of the official v1.1 script."""
  total = em = f1 = 0
  for qid, golds in questions(dataset):
    total += 1
    if qid not in predictions:
      continue
    prediction = predictions[qid]
    em += max(exact_match(g, prediction) for g in golds)
    f1 += max(f1_v1(g, prediction) for g in golds)
  return {"exact_match": 100.0 * em / total, "f1": 100.0 * f1 / total}


def _summary(exact, f1, qids):
  return {"exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
          "f1": 100.0 * sum(f1[q] for q in qids) / len(qids), "total": len(qids)}


def _best_threshold(predictions, scores, na_probs, has_answer):
  score = best = sum(1 for q in has_answer if not has_answer[q])
  threshold = 0.0
  for qid in sorted(na_probs, key=lambda q: na_probs[q]):
    if qid not in scores:
      continue
    if has_answer[qid]:
      score += scores[qid]
    elif predictions[qid]:
      score -= 1
    if score > best:
      best, threshold = score, na_probs[qid]
  return 100.0 * best / len(scores), threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
  """The official v2.0 script's dict: exact, f1, total, HasAns_* and
  NoAns_* (when there are such questions), and with na_probs best_exact,
  best_exact_thresh, best_f1, best_f1_thresh.

  Raises:
    ValueError: a question without a prediction (naming it).
  """
  has_answer, exact, f1 = {}, {}, {}
  for qid, golds in questions(dataset):
    has_answer[qid] = bool(golds)
    golds = [g for g in golds if normalize_answer(g)] or [""]
    if qid not in predictions:
      raise ValueError(f"no prediction for question {qid}")
    prediction = predictions[qid]
    exact[qid] = max(exact_match(g, prediction) for g in golds)
    f1[qid] = max(f1_v2(g, prediction) for g in golds)
  probs = na_probs if na_probs is not None else {q: 0.0 for q in predictions}
  thresholded = []
  for raw in (exact, f1):
    thresholded.append({q: float(not has_answer[q]) if probs[q] > na_prob_thresh else s
                        for q, s in raw.items()})
  out = _summary(*thresholded, list(exact))
  for prefix, want in (("HasAns", True), ("NoAns", False)):
    qids = [q for q, h in has_answer.items() if h == want]
    if qids:
      out.update({f"{prefix}_{k}": v for k, v in _summary(*thresholded, qids).items()})
  if na_probs is not None:
    out["best_exact"], out["best_exact_thresh"] = _best_threshold(
        predictions, exact, na_probs, has_answer)
    out["best_f1"], out["best_f1_thresh"] = _best_threshold(
        predictions, f1, na_probs, has_answer)
  return out
