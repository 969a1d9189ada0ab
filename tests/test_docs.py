"""The documentation holds together: every relative link in README.md and docs/*.md reaches a file (and its #anchor
a heading of that page), every `configs/*.yaml` the pages name exists, every page of docs/ is reachable from the
README, and the README installs and tests with the commands CI runs."""

import re
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
CONFIG = re.compile(r"configs/[\w./-]*?\.ya?ml")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, each space a hyphen."""
    text = heading.lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings (outside code blocks); a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", text)):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of `page` that reaches no file, or no heading of its target page; links in code are text."""
    text = page.read_text()
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    where = page.relative_to(root)
    problems = []
    for target in LINK.findall(prose):
        if SCHEME.match(target):
            continue  # a web address: not checked offline
        path, _, anchor = urllib.parse.unquote(target).partition("#")
        if path.startswith("/"):
            problems.append(f"{where}: {target}: write links relative to the page")
            continue
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            problems.append(f"{where}: {target}: no such file")
        elif anchor and file.suffix != ".md":
            problems.append(f"{where}: {target}: an anchor into a file that is not a markdown page")
        elif anchor and anchor not in anchors(file.read_text()):
            problems.append(f"{where}: {target}: no heading '#{anchor}' in {file.relative_to(root)}")
    return problems


def config_problems(page: Path, root: Path = ROOT) -> list[str]:
    """Each `configs/....yaml` named on `page` (code included) that the repository lacks."""
    names = sorted(set(CONFIG.findall(page.read_text())))
    return [f"{page.relative_to(root)}: {name}: no such configuration" for name in names
            if not (root / name).is_file()]


def unlinked_pages(root: Path = ROOT) -> list[str]:
    """docs/ pages that no link leads to, following links from the README."""
    reached, todo = set(), [root / "README.md"]
    while todo:
        page = todo.pop()
        prose = CODE_SPAN.sub("", FENCE.sub("", page.read_text()))
        for target in LINK.findall(prose):
            path = urllib.parse.unquote(target).partition("#")[0]
            file = (page.parent / path).resolve() if path and not SCHEME.match(target) else None
            if file and file.suffix == ".md" and file.is_file() and file not in reached:
                reached.add(file)
                todo.append(file)
    return [str(p.relative_to(root)) for p in pages(root)[1:] if p.resolve() not in reached]


def test_every_relative_link_resolves():
    assert [p for page in pages() for p in link_problems(page)] == []


def test_every_named_configuration_exists():
    named = [name for page in pages() for name in CONFIG.findall(page.read_text())]
    assert "configs/crafter_envgen.yaml" in named  # the check sees the pages' config paths at all
    assert [p for page in pages() for p in config_problems(page)] == []


def test_every_docs_page_is_reachable_from_the_readme():
    assert len(pages()) > 5
    assert unlinked_pages() == []


def test_the_readme_installs_and_tests_as_ci_does():
    """.ci/run runs README's install and test commands: each must stay in the README's first code block."""
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in ci if line.startswith("make ")]
    block = FENCE.search((ROOT / "README.md").read_text()).group(0)
    assert commands == ["make install", "make test"]
    assert [line.split("#")[0].strip() for line in block.splitlines()[1:-1]] == commands


def section(text: str, heading: str) -> list[str]:
    """The lines of the `## heading...` section of a page, its heading included, up to the next `## ` heading."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## " + heading))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d+ min \d+ s\b")


def test_the_readme_says_how_long_setting_up_takes_in_a_short_section():
    """A newcomer reads what to type and about how long it takes: the install section stays within 12 lines, with
    one time figure for each command, and the README holds no dated measurement (those live in docs/benchmarks.md)."""
    readme = (ROOT / "README.md").read_text()
    install = section(readme, "Install and test")
    assert len(install) <= 12, len(install)
    commands = [line for line in install if line.startswith("make ")]
    assert len(commands) == 2 and all(re.search(r"# about \d+ minutes?\b", line) for line in commands), commands
    assert not [line for line in readme.splitlines() if DATED.search(line)]
    assert "#the-test-suites-time-cpu" in (ROOT / "docs" / "testing.md").read_text()


def test_the_makefile_says_what_each_target_does_without_dated_timings():
    makefile = (ROOT / "Makefile").read_text()
    assert not [line for line in makefile.splitlines() if DATED.search(line)]
    targets = re.findall(r"^(\w+):.*## \S", makefile, re.M)
    assert targets == ["install", "test", "check"]


def test_slugs_are_githubs():
    assert slug("The score, honestly") == "the-score-honestly"
    assert slug("Methods and baselines (`method:`)") == "methods-and-baselines-method"
    assert slug("What a run writes (`runs/<config name>/` or `--out`)") == "what-a-run-writes-runsconfig-name-or---out"
    assert anchors("# A\n\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_the_checks_catch_what_is_broken(tmp_path):
    """The checks above fail on a broken tree: a missing file, a missing anchor, an absolute link, a missing config
    and a page nothing links to are each reported; links inside code are not links."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "real.yaml").write_text("seeds: 1\n")
    (tmp_path / "docs" / "a.md").write_text("# Page A\n\n## Some section\n\n[back](../README.md#top)\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Nobody links here\n")
    (tmp_path / "README.md").write_text(
        "# Top\n\n"
        "[fine](docs/a.md#some-section) [gone](docs/gone.md) [bad anchor](docs/a.md#no-such-section)\n"
        "![picture](docs/missing.png) [absolute](/docs/a.md) [web](https://example.org/x.md)\n"
        "`[in code](docs/nowhere.md)` and `configs/real.yaml`, `configs/missing.yaml`\n"
        "[a link\nover two lines](x.md)\n\n"
        "```\n[in a block](docs/nowhere.md)\n```\n")
    readme = tmp_path / "README.md"
    assert link_problems(readme, tmp_path) == [
        "README.md: docs/gone.md: no such file",
        "README.md: docs/a.md#no-such-section: no heading '#no-such-section' in docs/a.md",
        "README.md: docs/missing.png: no such file",
        "README.md: /docs/a.md: write links relative to the page",
        "README.md: x.md: no such file",
    ]
    assert link_problems(tmp_path / "docs" / "a.md", tmp_path) == []
    assert config_problems(readme, tmp_path) == ["README.md: configs/missing.yaml: no such configuration"]
    assert unlinked_pages(tmp_path) == ["docs/orphan.md"]
