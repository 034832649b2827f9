"""bench_peers' SQuAD workload: SQuAD-format fine-tuning and prediction,
features and decoding included, on the same windows.

Ours: bert_tf.downstream.span (run_squad's path): squad.read_examples and
convert_examples (the original's windows: max_seq_length, doc_stride,
max_query_length), build_span_model, squad_finetune.train (the original's
recipe, one checkpoint written at the end), squad_finetune.predict_logits
and span_answers.decode.

Theirs: a run_qa-style loop: BertTokenizerFast windows with offsets
(truncation="only_second", return_overflowing_tokens, padded to
max_length, run_qa's default), the answer's tokens found from the offsets
(the [CLS] index when the answer is not wholly in a window),
BertForQuestionAnswering trained with fused AdamW, linear warmup 10%,
clipping at 1.0, saved at the end (as run_qa's Trainer saves); prediction in
torch.inference_mode and a postprocessing of start/end logits into answers
written here after run_qa's rule (n-best starts and ends of each window,
spans inside the context, at most max_answer_length tokens, the best
start + end logit over the question's windows, its text cut from the
context by the offsets).

Same windows: the fast tokenizer's `stride` is the overlap of two windows,
the original's doc_stride the step between their starts; with a question
of q tokens a window holds L = max_seq_length - q - 3 context tokens, so
stride = L - doc_stride gives the original's windows. Theirs tokenizes the
questions of each length together with that stride (a handful of calls).
The pairing check asserts the windows' ids are equal on both sides, the
start/end logits of the same weights agree, and prints how many training
labels and decoded answers agree.

Data: a SQuAD 1.1 file made from KJV (../shared/corpora/kjv.txt, or
generated lines without it): each paragraph a few consecutive verses, the
questions the first words of another verse, the answer a 1-5 word span of
the paragraph at its character offset. Both sides train the same number of
steps, int(questions / batch) (the original's count for one epoch), of
the same batch of windows.
"""

import collections
import json
import os
import random

SQUAD_ATOL = 1e-4
N_BEST = 20
MAX_ANSWER = 30


def add_flags(p):
  p.add_argument("--squad_seq", type=int, default=128, help="squad: max_seq_length")
  p.add_argument("--doc_stride", type=int, default=64, help="squad: doc_stride (the original's)")
  p.add_argument("--max_query_length", type=int, default=32, help="squad: max_query_length")
  p.add_argument("--squad_train", type=int, default=384, help="squad: training questions")
  p.add_argument("--squad_dev", type=int, default=192, help="squad: dev questions")


SMOKE = (("squad_seq", 64), ("doc_stride", 32), ("max_query_length", 16), ("squad_train", 24),
         ("squad_dev", 12))


def _lines(corpus):
  if os.path.exists(corpus):
    with open(corpus, encoding="utf-8") as f:
      return [" ".join(l.split()) for l in f if l.strip()]
  return [f"line {i} of the words {' '.join(f'w{j}' for j in range(i % 17 + 5))}."
          for i in range(5000)]


def make_squad(lines, questions, seed, verses=5):
  """A SQuAD 1.1 dict: paragraphs of `verses` consecutive lines, 3
  questions each (the first 3-7 words of a random line), each answer a 1-5
  word span of its paragraph at its character offset."""
  rng = random.Random(seed)
  paragraphs, made = [], 0
  while made < questions:
    first = rng.randrange(len(lines) - verses)
    context = " ".join(lines[first:first + verses])
    words = context.split(" ")
    qas = []
    for _ in range(min(3, questions - made)):
      at = rng.randrange(len(words))
      text = " ".join(words[at:at + rng.randint(1, 5)])
      start = len(" ".join(words[:at])) + (1 if at else 0)
      question = " ".join(rng.choice(lines).split()[:rng.randint(3, 7)]) + "?"
      qas.append({"id": f"q{made}", "question": question,
                  "answers": [{"text": text, "answer_start": start}]})
      made += 1
    paragraphs.append({"context": context, "qas": qas})
  return {"version": "1.1", "data": [{"title": "kjv", "paragraphs": paragraphs}]}


def setup(args, work, corpus):
  lines = _lines(corpus)
  for name, n, seed in (("train", args.squad_train, 11), ("dev", args.squad_dev, 12)):
    with open(os.path.join(work, f"squad_{name}.json"), "w", encoding="utf-8") as f:
      json.dump(make_squad(lines, n, seed), f)


# ------------------------------------------------------------------------------
# Ours
# ------------------------------------------------------------------------------


def ours(args, bert, vocab_file, timed):
  import dataclasses  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream import finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import span_answers  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad  # pylint: disable=g-import-not-at-top
  from bert_tf.downstream.span import squad_finetune  # pylint: disable=g-import-not-at-top
  from bert_tf.models import hf_config  # pylint: disable=g-import-not-at-top
  from bert_tf.serving import hf_export  # pylint: disable=g-import-not-at-top
  work = args.work
  config = squad_finetune.SquadConfig(
      vocab_file=vocab_file, output_dir=os.path.join(work, "squad_ours"),
      train_file=os.path.join(work, "squad_train.json"),
      predict_file=os.path.join(work, "squad_dev.json"), max_seq_length=args.squad_seq,
      doc_stride=args.doc_stride, max_query_length=args.max_query_length, do_train=True,
      do_predict=True, train_batch_size=args.batch, predict_batch_size=args.batch,
      learning_rate=1e-4, num_train_epochs=1.0, n_best_size=N_BEST,
      max_answer_length=MAX_ANSWER)
  tokenizer = finetune.config_tokenizer(config, bert)
  examples, features, _, _ = squad_finetune.read_training_data(config, tokenizer)
  dev_examples, dev_features = squad_finetune.read_predict_data(config, tokenizer)
  model, _ = squad_finetune.build_span_model(bert, "", 0)
  arrays = squad.feature_arrays(dev_features[:args.batch], with_positions=False)
  start, end = model({k: tf.constant(v) for k, v in arrays.items()}, training=False)
  hf_export.write_hf_head_folder(model.encoder, bert, "bert", hf_config.QUESTION_ANSWERING,
                                 model.head.kernel.numpy(), model.head.bias.numpy(),
                                 vocab_file, True, os.path.join(work, "hf_squad"))
  raw = squad_finetune.predict_logits(model, dev_features, args.batch)
  answers, _, _ = span_answers.decode(dev_examples, dev_features, raw, N_BEST, MAX_ANSWER)
  by_id = {e.qas_id: i for i, e in enumerate(examples)}
  check = {"dev_ids": [f.input_ids for f in dev_features],
           "labels": {f"{examples[f.example_index].qas_id}/{f.doc_span_index}":
                      [f.start_position, f.end_position] for f in features},
           "start": np.asarray(start).tolist(), "end": np.asarray(end).tolist(),
           "answers": dict(answers), "questions": len(by_id)}
  steps = squad_finetune.num_train_steps(config, len(examples))
  counter = [0]

  def train():
    counter[0] += 1
    round_config = dataclasses.replace(
        config, output_dir=os.path.join(work, f"squad_ours{counter[0]}"))

    def run():
      tok = finetune.config_tokenizer(round_config, bert)
      ex, feats, _, _ = squad_finetune.read_training_data(round_config, tok)
      trained, _ = squad_finetune.build_span_model(bert, "", 0)
      squad_finetune.train(trained, round_config, feats, len(ex))
    return timed(run, steps * args.batch)

  def predict():
    def run():
      ex, feats = squad_finetune.read_predict_data(config, tokenizer)
      results = squad_finetune.predict_logits(model, feats, args.batch)
      span_answers.decode(ex, feats, results, N_BEST, MAX_ANSWER)
    return timed(run, len(dev_features))
  settings = (f"squad: run_squad's path (downstream.span): features by convert_examples "
              f"(seq {args.squad_seq}, doc_stride {args.doc_stride}, query "
              f"{args.max_query_length}), {steps} steps of {args.batch} windows "
              f"(int(questions / batch)), adamw_original, warmup 10%, clip 1.0, checkpoint "
              f"written at the end, tracing included; predict: features, predict_logits "
              f"(the model's inference traced once, before the rounds), span_answers.decode")
  return check, {"squad train": train, "squad predict": predict}, settings


# ------------------------------------------------------------------------------
# Theirs
# ------------------------------------------------------------------------------


def _read(path):
  with open(path, encoding="utf-8") as f:
    data = json.load(f)["data"]
  out = []
  for article in data:
    for paragraph in article["paragraphs"]:
      for qa in paragraph["qas"]:
        answer = qa["answers"][0] if qa.get("answers") else None
        out.append({"id": qa["id"], "question": qa["question"].lstrip(),
                    "context": paragraph["context"], "answer": answer})
  return out


def windows(tokenizer, questions, seq, doc_stride, max_query_length):
  """run_qa's features with the original's windows: the tokenizer's output
  for each question length (stride = the window's context length -
  doc_stride), merged back in question order. Returns (encodings: a list of
  per-window dicts with input_ids, token_type_ids, attention_mask,
  offset_mapping, sequence_ids, example index)."""
  lengths = [len(ids) for ids in tokenizer([q["question"] for q in questions],
                                           add_special_tokens=False)["input_ids"]]
  groups = collections.defaultdict(list)
  for i, n in enumerate(lengths):
    if n > max_query_length:
      raise ValueError(f"question {questions[i]['id']} has {n} tokens, over "
                       f"max_query_length={max_query_length} (theirs does not cut questions)")
    groups[n].append(i)
  out = [None] * len(questions)
  for n, members in groups.items():
    enc = tokenizer([questions[i]["question"] for i in members],
                    [questions[i]["context"] for i in members], truncation="only_second",
                    max_length=seq, stride=seq - n - 3 - doc_stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True,
                    padding="max_length")
    per = collections.defaultdict(list)
    for w, sample in enumerate(enc["overflow_to_sample_mapping"]):
      per[members[sample]].append({
          "input_ids": enc["input_ids"][w], "token_type_ids": enc["token_type_ids"][w],
          "attention_mask": enc["attention_mask"][w], "offsets": enc["offset_mapping"][w],
          "sequence_ids": enc.sequence_ids(w), "example": members[sample]})
    for i, ws in per.items():
      out[i] = ws
  return [w for ws in out for w in ws]


def labels(window, answer):
  """run_qa's training labels of a window: the answer's first and last
  token, or (0, 0) ([CLS]) when the answer is not wholly inside it."""
  seq_ids, offsets = window["sequence_ids"], window["offsets"]
  first = seq_ids.index(1)
  last = len(seq_ids) - 1 - seq_ids[::-1].index(1)
  begin, end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
  if offsets[first][0] > begin or offsets[last][1] < end:
    return 0, 0
  s = first
  while s <= last and offsets[s][0] <= begin:
    s += 1
  e = last
  while e >= first and offsets[e][1] >= end:
    e -= 1
  return s - 1, e + 1


def postprocess(questions, wins, starts, ends):
  """{question id: answer text}: run_qa's rule over each question's windows."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  by_example = collections.defaultdict(list)
  for w, window in enumerate(wins):
    by_example[window["example"]].append(w)
  answers = {}
  for i, q in enumerate(questions):
    best = []
    for w in by_example[i]:
      offsets, seq_ids = wins[w]["offsets"], wins[w]["sequence_ids"]
      s_logits, e_logits = starts[w], ends[w]
      for s in np.argsort(s_logits)[-1:-N_BEST - 1:-1]:
        for e in np.argsort(e_logits)[-1:-N_BEST - 1:-1]:
          if seq_ids[s] != 1 or seq_ids[e] != 1 or e < s or e - s + 1 > MAX_ANSWER:
            continue
          best.append((float(s_logits[s] + e_logits[e]), offsets[s][0], offsets[e][1]))
    best.sort(reverse=True)
    top = best[:N_BEST]
    if top:
      scores = np.array([t[0] for t in top])
      probs = np.exp(scores - scores.max())
      probs /= probs.sum()  # run_qa's n-best probabilities, computed as it does
    answers[q["id"]] = q["context"][top[0][1]:top[0][2]] if top else ""
  return answers


def theirs(args, device, optimizer_fn, timed):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  work = args.work
  folder = os.path.join(work, "hf_squad")
  tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
  train_q = _read(os.path.join(work, "squad_train.json"))
  dev_q = _read(os.path.join(work, "squad_dev.json"))
  order = list(range(len(train_q)))
  random.Random(12345).shuffle(order)  # as ours: the original's pre-shuffle
  train_q = [train_q[i] for i in order]
  win_args = (args.squad_seq, args.doc_stride, args.max_query_length)
  tensors = lambda ws, keys: {k: torch.tensor([w[k] for w in ws], device=device) for k in keys}
  inputs = ("input_ids", "token_type_ids", "attention_mask")

  def predict(model, questions):
    wins = windows(tokenizer, questions, *win_args)
    starts, ends = [], []
    with torch.inference_mode():
      for i in range(0, len(wins), args.batch):
        out = model(**tensors(wins[i:i + args.batch], inputs))
        starts.append(out.start_logits.cpu().numpy())
        ends.append(out.end_logits.cpu().numpy())
    return wins, np.concatenate(starts), np.concatenate(ends)

  hf = transformers.BertForQuestionAnswering.from_pretrained(folder).to(device).eval()
  dev_wins, starts, ends = predict(hf, dev_q)
  train_wins = windows(tokenizer, train_q, *win_args)
  check = {"dev_ids": [w["input_ids"] for w in dev_wins],
           "labels": {f"{train_q[w['example']]['id']}/{k}": list(labels(w, train_q[w["example"]]
                                                                        ["answer"]))
                      for k, w in _numbered(train_wins)},
           "start": starts[:args.batch].tolist(), "end": ends[:args.batch].tolist(),
           "answers": postprocess(dev_q, dev_wins, starts, ends)}
  steps = max(1, int(len(train_q) / args.batch))
  counter = [0]

  def train():
    counter[0] += 1

    def run():
      wins = windows(tokenizer, train_q, *win_args)
      for w in wins:
        w["start_positions"], w["end_positions"] = labels(w, train_q[w["example"]]["answer"])
      torch.manual_seed(0)
      model = transformers.BertForQuestionAnswering(
          transformers.BertConfig.from_pretrained(folder)).to(device).train()
      optimizer, _ = optimizer_fn(model.parameters(), 1e-4)
      schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
      keys = inputs + ("start_positions", "end_positions")
      rng = random.Random(counter[0])
      done = 0
      while done < steps:
        perm = list(range(len(wins)))
        rng.shuffle(perm)
        for i in range(0, len(perm) - args.batch + 1, args.batch):
          if done == steps:
            break
          model(**tensors([wins[j] for j in perm[i:i + args.batch]], keys)).loss.backward()
          torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
          optimizer.step()
          schedule.step()
          optimizer.zero_grad(set_to_none=True)
          done += 1
      model.save_pretrained(os.path.join(work, f"squad_theirs{counter[0]}"))
    return timed(run, steps * args.batch)

  def predict_round():
    def run():
      wins, s, e = predict(hf, dev_q)
      postprocess(dev_q, wins, s, e)
    return timed(run, len(dev_wins))
  settings = (f"squad: BertForQuestionAnswering, run_qa-style: BertTokenizerFast windows "
              f"with offsets (the original's windows, padded to {args.squad_seq}), "
              f"{steps} steps of {args.batch} windows, AdamW fused, linear warmup 10%, clip "
              f"1.0, saved at the end; predict: windows, torch.inference_mode, run_qa's "
              f"postprocessing (n-best {N_BEST}, at most {MAX_ANSWER} tokens)")
  return check, {"squad train": train, "squad predict": predict_round}, settings


def _numbered(wins):
  """(index of the window within its question, window)."""
  seen = collections.Counter()
  for w in wins:
    yield seen[w["example"]], w
    seen[w["example"]] += 1


def pairing(ours_check, theirs_check):
  import numpy as np  # pylint: disable=g-import-not-at-top
  same_windows = ours_check["dev_ids"] == theirs_check["dev_ids"]
  diff = max(float(np.abs(np.array(ours_check[k]) - np.array(theirs_check[k])).max())
             for k in ("start", "end"))
  ol, tl = ours_check["labels"], theirs_check["labels"]
  label_same = sum(ol.get(k) == v for k, v in tl.items())
  oa, ta = ours_check["answers"], theirs_check["answers"]
  answer_same = sum(oa.get(k) == v for k, v in ta.items())
  return (same_windows and len(ol) == len(tl) and diff <= SQUAD_ATOL,
          f"dev windows equal: {same_windows} ({len(ours_check['dev_ids'])} ours, "
          f"{len(theirs_check['dev_ids'])} theirs), training windows {len(ol)} and {len(tl)}; "
          f"start/end logits on one batch of windows, same weights: largest difference "
          f"{diff:.1e} (tolerance {SQUAD_ATOL:g}); training labels equal on {label_same} of "
          f"{len(tl)} windows; decoded answers equal on {answer_same} of {len(ta)} questions")

