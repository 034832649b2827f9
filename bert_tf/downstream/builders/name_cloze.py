"""A span task (SQuAD 1.1 format) built from a cased corpus: which name of
the passage fills the blank of the next sentence.

BERT's Table 5 and RoBERTa's Table 2 read NSP's worth on SQuAD, a span task
whose answers depend on reading across sentences. A user's corpus has no
questions, but it has names (bert_tf/downstream/builders/name_tagging.py finds them) and
sentences that follow one another. A cloze over names, as in the CNN/Daily
Mail reading tasks, asks for both:

- the context is up to `passage_sentences` consecutive sentences of a
  document (at most `passage_words` words, at least one sentence);
- the question is the sentence after them, cut to `question_words` words
  either side of one name, with that name written as "_";
- the answer is that name's text in the context. A question is made only
  when the context holds the name and at least one other name, so the
  answer must be chosen by reading, and only for a name the sentence holds
  once (a second occurrence would give it away).

Each (document, sentence) makes one paragraph, each eligible name in the
sentence one question. Questions go to train, dev or test (80/10/10) by the
SHA-256 of their sentence's text, as the names task splits its lines. The
functions here are pure: the same text gives the same task.
"""

import json
import os
import re

from bert_tf.io import file_io as files
from bert_tf.downstream.builders import name_tagging
from bert_tf.data.text import split

SPLITS = ("train", "dev", "test")
BLANK = "_"


def split_of(sentence):
  """"train" (80%), "dev" (10%) or "test" (10%), by the SHA-256 of the sentence."""
  return split.split_by_hash("name_cloze\t" + sentence)


def _entity_spans(tokens, labels):
  """[(first, last + 1, text)] of each entity of a tagged sentence, its text
  as the sentence writes it (words joined by a space)."""
  spans, start = [], None
  for i, label in enumerate(labels + ["O"]):
    if start is not None and label != "I-" + name_tagging.ENTITY:
      spans.append((start, i, " ".join(tokens[start:i])))
      start = None
    if label == "B-" + name_tagging.ENTITY:
      start = i
  return spans


def _find(text, phrase):
  """The character offset of the first whole-word occurrence of `phrase`
  (its words separated by any whitespace) in `text`, or -1."""
  pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, phrase.split())) + r"(?!\w)"
  found = re.search(pattern, text)
  return found.start() if found else -1


def _passage(sentences, end, max_sentences, max_words):
  """The sentences before index `end` that make the context: the nearest
  first, while within `max_words` (the nearest one always)."""
  chosen, words = [], 0
  for sentence in reversed(sentences[max(0, end - max_sentences):end]):
    n = len(sentence.split())
    if chosen and words + n > max_words:
      break
    chosen.insert(0, sentence)
    words += n
  return " ".join(chosen)


def questions_of_document(document, names, document_id, passage_sentences=3,
                          passage_words=60, question_words=6):
  """The cloze questions of one document.

  Args:
    document: its text, one sentence a line.
    names: lower-cased name types (name_tagging.name_types).
    document_id: a stable name for ids and titles.
    passage_sentences, passage_words: the context's limits.
    question_words: tokens kept on each side of the blank.

  Returns:
    list of (sentence, paragraph): paragraph is a SQuAD 1.1 paragraph dict
    {"context", "qas": [{"id", "question", "answers": [{"text",
    "answer_start"}]}]} with at least one question.
  """
  sentences = [line.strip() for line in document.splitlines() if line.strip()]
  out = []
  for i in range(1, len(sentences)):
    context = _passage(sentences, i, passage_sentences, passage_words)
    _, context_labels = name_tagging.tag_line(context, names)
    context_names = {e for e in name_tagging.entities(
        name_tagging.tokenize(context), context_labels)}
    if len(context_names) < 2:
      continue
    tokens, labels = name_tagging.tag_line(sentences[i], names)
    spans = _entity_spans(tokens, labels)
    counts = {}
    for _, _, text in spans:
      counts[text.lower()] = counts.get(text.lower(), 0) + 1
    qas = []
    for first, last, text in spans:
      if counts[text.lower()] > 1 or text.lower() not in context_names:
        continue
      start = _find(context, text)
      if start < 0:  # the context writes it in another case only
        continue
      question = (tokens[max(0, first - question_words):first] + [BLANK] +
                  tokens[last:last + question_words])
      qas.append({"id": f"{document_id}-{i}-{first}", "question": " ".join(question),
                  "answers": [{"text": context[start:start + len(text)],
                               "answer_start": start}]})
    if qas:
      out.append((sentences[i], {"context": context, "qas": qas}))
  return out


def build(documents, names, **limits):
  """dict split -> SQuAD 1.1 `data` list (one article per document that has
  questions in that split), in corpus order."""
  data = {s: [] for s in SPLITS}
  for number, document in enumerate(documents):
    document_id = f"doc{number}"
    by_split = {s: [] for s in SPLITS}
    for sentence, paragraph in questions_of_document(document, names, document_id, **limits):
      by_split[split_of(sentence)].append(paragraph)
    for s in SPLITS:
      if by_split[s]:
        data[s].append({"title": document_id, "paragraphs": by_split[s]})
  return data


def summary(data, names):
  """Per split: articles, paragraphs and questions, and what two readers
  that do not read the question score (exact match): one choosing a name
  of the passage at random (`uniform_choice`, expected), one always
  choosing the passage's most frequent name (`most_frequent_name`, the
  first of a tie)."""
  out = {}
  for s, articles in data.items():
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    questions = uniform = frequent = 0
    for p in paragraphs:
      tokens, labels = name_tagging.tag_line(p["context"], names)
      found = name_tagging.entities(tokens, labels)
      top = max(dict.fromkeys(found), key=found.count)
      for qa in p["qas"]:
        questions += 1
        uniform += 1 / len(set(found))
        frequent += qa["answers"][0]["text"].lower() == top
    out[s] = {"articles": len(articles), "paragraphs": len(paragraphs),
              "questions": questions,
              "uniform_choice": round(uniform / questions, 4) if questions else 0.0,
              "most_frequent_name": round(frequent / questions, 4) if questions else 0.0}
  return out


def write_task(corpus, output_dir, heldout_every=0, min_count=3, min_share=0.95,
               **limits):
  """Builds the task from the corpus file and writes train.json, dev.json,
  test.json (SQuAD 1.1) and summary.json under output_dir (each atomically,
  all built before any is written). Name types are judged on the whole
  corpus; with heldout_every=N only every N-th document
  (data/text/split.py's held-out documents) gives questions.

  Returns:
    summary(): dict split -> counts.

  Raises:
    FileNotFoundError, ValueError: naming the corpus (no name type, no question
    in a split).
  """
  text = files.read_text(corpus, "corpus")
  names = name_tagging.name_types(text.splitlines(), min_count, min_share)
  if not names:
    raise ValueError(f"{corpus}: no word is written capitalized inside its sentences "
                     f"{min_count}+ times ({min_share:.0%} of them): is the corpus cased?")
  documents = (split.split_documents(text, heldout_every)[1] if heldout_every
               else split.documents_of(text))
  data = build(documents, names, **limits)
  empty = [s for s in SPLITS if not data[s]]
  if empty:
    raise ValueError(f"{corpus}: the name_cloze task has no {empty[0]} question (too few "
                     f"sentences after two names{' held out' if heldout_every else ''})")
  counts = summary(data, names)
  outputs = [(os.path.join(output_dir, f"{s}.json"),
              json.dumps({"version": "1.1", "data": data[s]}, ensure_ascii=False) + "\n")
             for s in SPLITS]
  outputs.append((os.path.join(output_dir, "summary.json"), json.dumps(
      {"corpus": corpus, "heldout_every": heldout_every, "min_count": min_count,
       "min_share": min_share, "name_types": len(names), "limits": limits,
       "splits": counts}, indent=2, sort_keys=True) + "\n"))
  for path, content in outputs:
    files.atomic_write(path, content)
  return counts


def describe_counts(counts):
  """A line per split of summary()'s counts (the tool prints them)."""
  return [f"name_cloze/{s}.json: {c['questions']} questions on {c['paragraphs']} "
          f"passages of {c['articles']} documents; without reading the question, a random "
          f"name of the passage scores {c['uniform_choice']:.3f}, its most frequent name "
          f"{c['most_frequent_name']:.3f}" for s, c in counts.items()]
