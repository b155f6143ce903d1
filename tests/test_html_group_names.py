"""The HTML report names --by groups as the terminal does: in the list of groups that failed
the gate, each as its Python literal (as the gate's lines on stderr name it), and in the group
diagrams' captions as the tables show it (``group_cell``). A group named ``(pooled)`` must not
read as the pooled rows, nor one named ``a, b`` as two groups."""

from __future__ import annotations

from html.parser import HTMLParser

from harness import run, write_jsonl

FAILING = ("(pooled)", "a, b")


def rows():
    """Two groups answering wrong at confidences 0.55 .. 0.94 (ECE = their mean confidence,
    0.745 > 0.1), and a group ``c`` of 2,000 rows right at exactly their confidence in each
    bin (ECE 0), which keeps the pooled ECE at 80 * 0.745 / 2080 = 0.029 < 0.1."""
    out = [
        {"confidence": 0.55 + 0.01 * i, "correct": False, "task": group}
        for i in range(40)
        for group in FAILING
    ]
    for i in range(2000):
        confidence = 0.05 + 0.1 * (i % 10)  # 200 rows at each, round(200 * c) of them right
        out.append({"confidence": confidence, "correct": i // 10 < round(200 * confidence)})
        out[-1]["task"] = "c"
    return out


class _Texts(HTMLParser):
    """The text of every ``<p>`` and of every ``<figcaption>``'s ``<strong>``, unescaped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs, self.captions = [], []
        self._in = None
        self._figcaption = False

    def handle_starttag(self, tag, attrs):
        if tag == "figcaption":
            self._figcaption = True
        if tag == "p":
            self._in = self.paragraphs
            self.paragraphs.append("")
        elif tag == "strong" and self._figcaption:
            self._in = self.captions
            self.captions.append("")

    def handle_endtag(self, tag):
        if tag == "figcaption":
            self._figcaption = False
        if tag in ("p", "strong") and (tag == "p") == (self._in is self.paragraphs):
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self._in[-1] += data


def page_texts(tmp_path):
    preds = write_jsonl(tmp_path / "preds.jsonl", rows())
    page = tmp_path / "report.html"
    args = ["calibrate", preds, "--by", "task", "--gate-each", "--max-ece", "0.1"]
    result = run([*args, "--html", page, "-q"])
    assert result.exit_code == 1, result.stderr
    # the terminal's own lines, for the names the page must match
    assert "gate failed: ece in group '(pooled)' = 0.745 exceeds --max-ece 0.1" in result.stderr
    assert "gate failed: ece in group 'a, b' = 0.745 exceeds --max-ece 0.1" in result.stderr
    parser = _Texts()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def test_groups_that_failed_are_named_as_their_literals(tmp_path):
    texts = page_texts(tmp_path)
    listed = [p for p in texts.paragraphs if p.startswith("Groups that failed")]
    assert listed == ["Groups that failed (2): '(pooled)', 'a, b'"]


def test_group_diagrams_are_captioned_as_the_tables_name_the_groups(tmp_path):
    texts = page_texts(tmp_path)
    # the pooled rows' own diagram first, then one per group: '(pooled)' quoted as in the
    # tables (it is not the pooled rows), the others as they are
    assert texts.captions == ["all rows", "'(pooled)'", "a, b", "c"]
