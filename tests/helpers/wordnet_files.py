"""A few WordNet database files in the original format."""

from bert_tf.downstream.builders import wordnet


LICENSE = "  1 This software and database is being provided to you, the LICENSEE, by  \n"


DATA = {
    "noun": [
        "08420278 14 n 03 depository_financial_institution 0 bank 0 banking_concern 0 001 "
        "@ 08054721 n 0000 | a financial institution that accepts deposits; \"he cashed a "
        "check at the bank\"; \"that bank holds the mortgage on my home\"  ",
        "09213565 17 n 01 bank 0 001 @ 09238143 n 0000 | sloping land (especially the slope "
        "beside a body of water); \"they pulled the canoe up on the bank\"; \"he sat on the "
        "banks of the river\"  ",
    ],
    "verb": [
        "01926311 38 v 02 run 0 scat 0 001 @ 01835496 v 0000 01 + 02 00 | move fast by using "
        "one's feet; \"She ran to the store\"; \"the children run in the park\"  ",
        "02730135 42 v 01 run 0 000 01 + 02 00 | extend or continue for a certain period of "
        "time; \"the road runs along the river\"; \"the fence ran for miles\"  ",
    ],
    "adj": [
        "00001740 00 a 01 able(a) 0 000 | (usually followed by `to') having the necessary "
        "means or skill; \"able to swim\"; \"she was able to program her computer\"  ",
        "00002098 00 a 01 able 1 000 | have the skills and qualifications to do things well; "
        "\"an able leader\"; \"able to get things done\"  ",
    ],
    "adv": [],
}


INDEX = {
    "noun": ["bank n 2 1 @ 2 0 08420278 09213565  ",
             "depository_financial_institution n 1 1 @ 1 0 08420278  "],
    "verb": ["run v 2 1 @ 2 0 01926311 02730135  ", "scat v 1 1 @ 1 0 01926311  "],
    "adj": ["able a 2 0 2 0 00001740 00002098  "],
    "adv": [],
}


def write_wordnet(root, data=DATA, index=INDEX):
  for pos in wordnet.POS_FILES:
    (root / f"data.{pos}").write_text(LICENSE + "".join(l + "\n" for l in data[pos]))
    (root / f"index.{pos}").write_text(LICENSE + "".join(l + "\n" for l in index[pos]))
  (root / "verb.exc").write_text("ran run\nscatted scat\n")
  return str(root)
