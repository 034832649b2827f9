"""Tests of bert_tf.data.pair_tasks: each pair task's rows follow its rule, are
balanced and deterministic, and dev shares no document with train."""

import pytest

from bert_tf.data import pair_tasks


def _documents(n_docs=40, n_sentences=8):
  # Sentence "d<doc> s<index> w w" names where it came from.
  return [[f"d{d} s{i} word word" for i in range(n_sentences)] for d in range(n_docs)]


def _where(sentence):
  doc, index = sentence.split()[:2]
  return int(doc[1:]), int(index[1:])


def test_parse_documents_splits_on_blank_lines():
  text = "one two three.\nfour five six.\n\n\n  seven eight nine.  \r\n\nlast one here.\n"
  assert pair_tasks.parse_documents(text) == [["one two three.", "four five six."],
                                          ["seven eight nine."], ["last one here."]]


@pytest.mark.parametrize("task", pair_tasks.TASKS)
def test_each_pair_task_follows_its_rule(task):
  docs = _documents()
  rows = pair_tasks.task_rows(docs, task, seed=7)
  assert rows == pair_tasks.task_rows(docs, task, seed=7)
  assert rows != pair_tasks.task_rows(docs, task, seed=8)
  assert 0.4 < pair_tasks.label_share(rows) < 0.6  # 280 anchors: 5 sd is about 0.15
  for d, a, b, label in rows:
    (da, ia), (db, ib) = _where(a), _where(b)
    if label == "1":
      assert da == db == d and ib == ia + 1
    elif task == "sop":
      assert da == db == d and ia == ib + 1
    elif task == "nsp_same_doc":
      assert da == db == d and (ib < ia - 1 or ib > ia + 2)
    else:
      assert da == d and db != d


def test_short_sentences_make_no_anchor_and_small_documents_no_same_doc_negative():
  docs = [["a b", "c d e", "f g h"], ["i j k", "l m n"], ["o p q", "r s t"]]
  rows = pair_tasks.task_rows(docs, "sop", seed=1)
  assert {(a, b) for _, a, b, label in rows if label == "1"} <= {
      ("c d e", "f g h"), ("i j k", "l m n"), ("o p q", "r s t")}
  same_doc = pair_tasks.task_rows(docs, "nsp_same_doc", seed=1)
  assert all(label == "1" for *_, label in same_doc)


def test_dev_rows_come_from_other_documents_than_train():
  rows = pair_tasks.task_rows(_documents(), "nsp_random", seed=3)
  train, dev = pair_tasks.split_rows(rows, dev_every=5)
  train_docs = {_where(a)[0] for a, _, _ in train}
  dev_docs = {_where(a)[0] for a, _, _ in dev}
  assert dev and train and not train_docs & dev_docs
  assert len(train) + len(dev) == len(rows)


def test_tsv_has_a_header_and_no_stray_tabs():
  text = pair_tasks.to_tsv([("a\tb", "c\nd", "1")])
  assert text == "text_a\ttext_b\tlabel\na b\tc d\t1\n"


def test_bad_requests_are_one_line_errors():
  with pytest.raises(ValueError, match="'nsp' is not one of nsp_random"):
    pair_tasks.task_rows(_documents(), "nsp")
  with pytest.raises(ValueError, match="nsp_random needs at least two documents"):
    pair_tasks.task_rows(_documents(n_docs=1), "nsp_random")
