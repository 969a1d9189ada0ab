"""Orbax checkpoints: a restored run continues exactly like the uninterrupted one; a run's checkpoints rotate; old
run directories still read."""

from __future__ import annotations

import shutil
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax.trainer import probes
from envgen_jax.trainer.checkpoint import (Checkpoints, load_metadata, newest_checkpoint, restore_checkpoint,
                                           save_checkpoint, saved_steps)
from envgen_jax.trainer.metrics import to_host
from envgen_jax.trainer.config import PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.factory import make_trainer
from tests import golden
from tests.trainer_configs import mlp
from tests.trees import assert_trees_equal

CFG = TrainerConfig(PPOAlgorithm(num_envs=8, num_steps=4, update_epochs=2, num_minibatches=2, anneal_lr=True,
                                 total_updates=20), mlp(16, 1), num_agents=2)


@pytest.fixture(scope="module")
def bandit():
    trainer = make_trainer(probes.BanditEnv(), CFG)
    bank = probes.make_bank([1.0, 0.5], shifts=[1, 2])
    rows = jnp.asarray([0, 1] * 4, jnp.int32)
    return trainer, bank, rows


def test_restored_run_continues_exactly(bandit, tmp_path):
    trainer, bank, rows = bandit
    ts = trainer.init(bank, rows)
    for _ in range(2):  # k = 2 chunks
        ts, _ = trainer.train_chunk(ts, bank, rows, num_updates=3)
    meta = {"chunk": 2, "config": {"lr": CFG.ppo.lr}, "seeds": np.arange(2)}  # numpy values are saved as JSON
    save_checkpoint(tmp_path / "ckpt", ts, meta)
    saved = jax.tree.map(np.array, ts)  # host copy: train_chunk donates its input

    uninterrupted, m_a = trainer.train_chunk(ts, bank, rows, num_updates=3)  # chunk k+1

    restored = restore_checkpoint(tmp_path / "ckpt", like=trainer.abstract_state(bank, rows))
    assert_trees_equal(restored, saved)
    resumed, m_b = trainer.train_chunk(restored, bank, rows, num_updates=3)

    assert_trees_equal(resumed, uninterrupted)
    assert_trees_equal(to_host(m_a), to_host(m_b))
    assert int(resumed.update_step[0]) == 9
    assert load_metadata(tmp_path / "ckpt") == {"chunk": 2, "config": {"lr": CFG.ppo.lr}, "seeds": [0, 1]}

    with pytest.raises(FileExistsError):
        save_checkpoint(tmp_path / "ckpt", resumed)
    save_checkpoint(tmp_path / "ckpt", resumed, overwrite=True)
    assert_trees_equal(restore_checkpoint(tmp_path / "ckpt", like=resumed), resumed)


def threads_still_running(since: set[threading.Thread], wait_s: float = 10.0) -> list[threading.Thread]:
    """Threads started after `since` that are still alive after `wait_s`. orbax closes each event loop it runs with
    loop.close(), which tells the loop's idle executor thread ("asyncio_0") to exit without waiting for it: such a
    thread may still be finishing when close() returns, so it gets time to end; a thread that keeps working does not."""
    extra = set(threading.enumerate()) - since
    for thread in extra:
        thread.join(timeout=wait_s / len(extra))
    return [t for t in extra if t.is_alive()]


def test_rotation_keeps_the_newest_and_restores_the_newest(bandit, tmp_path):
    trainer, bank, rows = bandit
    folder = tmp_path / "checkpoints"
    ts = trainer.init(bank, rows)
    threads = set(threading.enumerate())
    with Checkpoints(folder, keep=2) as checkpoints:
        assert checkpoints.latest_step() is None and not folder.exists()  # no checkpoint yet: no directory either
        for step in range(1, 6):
            ts, _ = trainer.train_chunk(ts, bank, rows, num_updates=3)  # the module's one chunk program
            path = checkpoints.save(step, ts, metadata={"loop": {"step": step}})
            assert path == folder / str(step) and newest_checkpoint(folder) == path
            assert checkpoints.all_steps() == list(range(max(1, step - 1), step + 1))
        newest = jax.tree.map(np.array, ts)
    assert not threads_still_running(since=threads)  # closed: no orbax thread left running
    assert sorted(p.name for p in folder.iterdir()) == ["4", "5"]  # exactly keep_checkpoints
    assert_trees_equal(restore_checkpoint(newest_checkpoint(folder), like=trainer.abstract_state(bank, rows)),
                        newest)
    assert load_metadata(newest_checkpoint(folder)) == {"loop": {"step": 5}}

    # A rotation that a kill interrupted leaves part of the old checkpoint (here its state alone): not a checkpoint.
    shutil.copytree(folder / "4" / "state", folder / "3" / "state")
    assert saved_steps(folder) == [4, 5] and newest_checkpoint(folder) == folder / "5"
    shutil.rmtree(folder / "3")
    # A save that a kill interrupted leaves only orbax's temporary directory: it never counts, and the next
    # manager clears it away.
    (folder / "6.orbax-checkpoint-tmp-1700000000").mkdir()
    assert newest_checkpoint(folder) == folder / "5"
    with Checkpoints(folder, keep=2) as checkpoints:
        assert checkpoints.latest_step() == 5
        checkpoints.save(6, ts)
    assert sorted(p.name for p in folder.iterdir()) == ["5", "6"]


def test_an_old_run_directory_reads_until_the_manager_saves(tmp_path):
    """The layout before the CheckpointManager (tests/data/golden/old_run): read, never rewritten."""
    folder = tmp_path / "checkpoints"
    shutil.copytree(golden.OLD_RUN / "checkpoints", folder)
    legacy = folder / (folder / "latest").read_text().strip()
    assert newest_checkpoint(folder) == legacy
    assert load_metadata(legacy)["loop"]["phase"] == 5

    with Checkpoints(folder, keep=1) as checkpoints:
        assert checkpoints.latest_step() is None  # the old entries are not the manager's
        checkpoints.save(1, {"x": np.arange(3)}, metadata={"loop": {}})
        checkpoints.save(2, {"x": np.arange(3)}, metadata={"loop": {}})
    assert newest_checkpoint(folder) == folder / "2"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["2", legacy.name, "latest"])


def test_threads_still_running_tells_a_working_thread_from_one_that_ends():
    before = set(threading.enumerate())
    stop = threading.Event()
    working = threading.Thread(target=stop.wait, name="working")
    ending = threading.Thread(target=lambda: stop.wait(0.2), name="ending")
    working.start(), ending.start()
    try:
        # 1.5 s a thread against a 0.2 s wait: holds on a machine three times slower, as a loaded one
        assert threads_still_running(since=before, wait_s=3.0) == [working]
    finally:
        stop.set()
        working.join()
    assert not threads_still_running(since=before)


# -- migrations: layouts older versions saved (trainer/migrations.py) ----------------------------------------------
def _flat(agent, drop=(), **extra) -> dict:
    """A TrainState as a flat dict of its fields (what orbax saved for a flax struct), less `drop`, plus `extra`."""
    import dataclasses
    return {**{f.name: getattr(agent, f.name) for f in dataclasses.fields(agent) if f.name not in drop}, **extra}


def test_a_checkpoint_from_before_the_agent_fields_restores_with_the_configs_hparams(bandit, tmp_path):
    trainer, bank, rows = bandit
    ts, _ = trainer.train_chunk(trainer.init(bank, rows), bank, rows, num_updates=3)
    save_checkpoint(tmp_path / "old", _flat(ts, drop=("hparams", "value_norm", "memory")))
    restored = trainer.restore(tmp_path / "old", bank, rows)
    assert_trees_equal(restored, ts)  # the config's hparams are what the agent trained with


def test_a_flat_level_replay_checkpoint_restores_into_a_replay_state(tmp_path):
    """Level replay's trainer once saved the sampler's state as a field of the TrainState (PLRTrainState)."""
    from envgen_jax.trainer.level_sampler import LevelSampler
    from envgen_jax.trainer.layouts import REPLAY
    from envgen_jax.trainer.replay import ReplayState
    trainer = make_trainer(probes.BanditEnv(), CFG, level_sampler=LevelSampler(capacity=2, min_fill=0.5))
    bank = probes.make_bank([1.0, 0.5], shifts=[1, 2])
    state, _ = trainer.train_chunk(trainer.init(bank, REPLAY), bank, REPLAY, num_updates=2)
    save_checkpoint(tmp_path / "flat", _flat(state.agent, sampler=state.sampler))
    restored = trainer.restore(tmp_path / "flat", bank, REPLAY)
    assert isinstance(restored, ReplayState)
    assert_trees_equal(restored, state)
    save_checkpoint(tmp_path / "today", state)  # today's layout restores as saved
    assert_trees_equal(trainer.restore(tmp_path / "today", bank, REPLAY), state)


# -- migration 4: the 'map' encoder's parameter names before the encoders were modules (issue 63) ----------------
MAP_AGENT = golden.ROOT / "tests" / "data" / "map_agent_before_issue63.npz"  # recorded at commit 932974f


def _nested(flat: dict, prefix: str) -> dict:
    out: dict = {}
    for key, value in flat.items():
        if key.startswith(prefix):
            *parents, leaf = key[len(prefix):].split("/")
            node = out
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = jnp.asarray(value)
    return out


def test_a_map_agent_of_the_first_layout_computes_the_same_after_renaming():
    """A 'map' agent's parameters and outputs as the code before issue 63 made them (3 x 4 cells x 5 channels and 6
    more features, 5 actions; its encoder a submodule with Dense layers over patches): renamed, today's network
    computes the same logits and values bit for bit as the old network (tests/first_layout.py) evaluated here, and
    the renaming inverts.

    The reference is computed on the machine that runs the test: float32 sums are rounded in an order that depends on
    the CPU (its vector width, AVX2 or AVX-512), so outputs recorded on one CPU differ from another's in their last
    bits (on an AVX-512 CPU 18 of 20 logits differed from the recording by up to 6.5e-9, about 14 float32 ulps, and
    the values by 3.6e-7). The recorded outputs only check that tests/first_layout.py is the network that wrote them,
    to 1e-5 of the largest output: 19 times the largest difference seen between CPUs, and 38,000 times below what
    one wrong layer moves them by (gelu read as relu: 4.7e-3)."""
    from envgen_jax.trainer import migrations
    from envgen_jax.trainer.encoders import MapNet, actor_critic
    from tests import first_layout

    recorded = dict(np.load(MAP_AGENT))
    old = _nested(recorded, "params/")
    assert "encoder" in old["params"] and "MapResidualBlock_1" in old["params"]["encoder"]
    obs = jax.random.uniform(jax.random.PRNGKey(1), (4, 66))  # threefry: the same bits on every machine
    before = first_layout.MapAgent(5, (3, 4, 5), width=8, depth=1, channels=(4, 6), res_blocks=2, layer_norm=True,
                                   activation="gelu")
    old_logits, old_value = before.apply(old, obs)
    scale = np.abs(recorded["logits"]).max()
    np.testing.assert_allclose(old_logits, recorded["logits"], rtol=0, atol=1e-5 * scale)
    np.testing.assert_allclose(old_value, recorded["value"], rtol=0, atol=1e-5 * np.abs(recorded["value"]).max())

    net = actor_critic(MapNet(width=8, depth=1, channels=(4, 6), res_blocks=2, layer_norm=True, activation="gelu"),
                       (66,), 5, map_shape=(3, 4, 5))
    params = {"params": migrations._map_as_today(old["params"])}
    assert jax.tree.map(jnp.shape, params) == jax.tree.map(jnp.shape, jax.eval_shape(net.init, jax.random.PRNGKey(0),
                                                                                      jnp.zeros(66)))
    logits, value = net.apply(params, obs)
    np.testing.assert_array_equal(logits, old_logits)
    np.testing.assert_array_equal(value, old_value)
    assert_trees_equal(migrations._map_as_before(params["params"]), old["params"])


def test_a_map_agents_checkpoint_of_the_first_layout_restores(tmp_path):
    """A whole train state saved with the first layout's 'map' names (parameters and Adam's moments) restores into
    today's, equal to the state it was made from."""
    import dataclasses

    from envgen_jax.trainer import migrations
    from envgen_jax.trainer.encoders import MapNet, NetworkConfig

    @dataclasses.dataclass(frozen=True)
    class MapBandit(probes.BanditEnv):
        map_shape: tuple = (2, 2, 1)  # its one-hot observation read as a 2 x 2 map

    cfg = TrainerConfig(PPOAlgorithm(num_envs=4, num_steps=2, num_minibatches=1),
                        NetworkConfig(kind="map", map=MapNet(width=4, depth=1, channels=(2,), res_blocks=1)))
    trainer = make_trainer(MapBandit(), cfg)
    bank, rows = probes.make_bank([1.0]), jnp.zeros(4, jnp.int32)
    state = jax.device_get(trainer.init(bank, rows))
    old = migrations._each_params(state, migrations._map_today, migrations._map_as_before)
    renamed = {jax.tree_util.keystr(path).split("[")[0] for path, _ in jax.tree_util.tree_flatten_with_path(old)[0]
               if "['encoder']" in jax.tree_util.keystr(path)}
    assert renamed == {".params", ".opt_state"}, renamed
    save_checkpoint(tmp_path / "old", old)
    assert_trees_equal(trainer.restore(tmp_path / "old", bank, rows), state)
