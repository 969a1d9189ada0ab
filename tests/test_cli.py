"""`envgen-jax` as a user meets it: --help for every command, and `render` writing pictures for both games."""

import json

import pytest
from PIL import Image

from envgen_jax.cli import build_parser, main


@pytest.mark.parametrize("command", [[], ["validate"], ["render"], ["settings"], ["train"], ["study"], ["llm"],
                                     ["llm", "generate"]])
def test_help_reads_like_documentation(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: envgen-jax") and len(text.splitlines()) > 5


def test_render_draws_one_panel_per_config(tmp_path, capsys):
    crafter = tmp_path / "crafter.json"
    crafter.write_text(json.dumps({"environments": [
        {"purpose": "coal", "config": {"environment_settings": {"target_biome": "mountain"}}},
        {"purpose": "start", "config": {}}]}))
    out = tmp_path / "crafter.png"
    assert main(["render", str(crafter), "--out", str(out), "--seed", "2"]) == 0
    assert "2 worlds, seed 2" in capsys.readouterr().out and Image.open(out).size[0] > 300

    heist = tmp_path / "heist.json"
    heist.write_text(json.dumps([{"maze_settings": {"maze_dim": 9, "num_keys": 1}}]))
    out = tmp_path / "heist.png"
    assert main(["render", str(heist), "--env", "heist", "--heist-mode", "easy", "--out", str(out)]) == 0
    assert Image.open(out).size[0] > 100
    heist.write_text(json.dumps([{"maze_settings": {"maze_dim": 13}}]))
    assert main(["render", str(heist), "--env", "heist", "--heist-mode", "easy", "--out", str(out)]) == 1
    assert "does not fit the world of 9x9" in capsys.readouterr().err
