"""Full Craftax as a game of the registry (`envgen_jax.games`): everything the run, the designer, the report and
the command line know about it. Its headline score is Craftax's own, the mean episode return as a share of the
most an episode can earn (226); the Crafter formula over its achievements stands beside it."""

from __future__ import annotations

from pathlib import Path

from envgen_jax.envs.craftax.config import CraftaxConfig
from envgen_jax.envs.craftax.targeting import TARGETING
from envgen_jax.envs.game import Game
from envgen_jax.envs.scores import subtask_score

# The 67 achievements (craftax's Achievement enum), alphabetical as the prompts list them.
CRAFTAX_ACHIEVEMENTS = tuple(sorted(TARGETING.own_levers))
MAX_RETURN = 226  # every achievement once: 25 x 1 + 18 x 3 + 15 x 5 + 9 x 8 (env.MAX_RETURN, from craftax's table)


# The skills an agent rarely meets by chance: each floor below the overworld entered, iron tools, a diamond, and
# each deep floor's first melee monster defeated (craftax's names, its typo `orc_solider` included).
DEEP_SKILLS = ("make_iron_pickaxe", "make_iron_sword", "collect_diamond",
               "enter_dungeon", "enter_gnomish_mines", "enter_sewers", "enter_vault", "enter_troll_mines",
               "enter_fire_realm", "enter_ice_realm", "enter_graveyard",
               "defeat_orc_solider", "defeat_gnome_warrior", "defeat_lizard", "defeat_knight", "defeat_troll",
               "defeat_pigman", "defeat_frost_troll", "defeat_necromancer")

# Craftax-1M, symbolic, % of the maximum return (Craftax's README).
PUBLISHED_1M = (("PPO", 2.2), ("PPO-RNN", 2.3), ("RND", 2.2), ("ICM", 2.2), ("E3B", 2.2), ("Efficient MBRL", 5.4),
                ("Simulus", 6.6))


class Craftax(Game):
    name = "craftax"
    title = "Craftax"
    config_cls = CraftaxConfig
    achievements = CRAFTAX_ACHIEVEMENTS
    prompts_dir = Path(__file__).parent / "prompts"
    targeting = TARGETING
    max_return = MAX_RETURN
    chain, chain_name = DEEP_SKILLS, "The deep skills"
    published_return_pct = PUBLISHED_1M
    score_name = "Crafter-formula score"
    score_is_crafter = False
    score_definition = ("Craftax's headline is the mean episode return of the scored-phase episodes as % of 226 "
                        "(return_pct); the score beside it is the Crafter formula over the 67 achievements: per "
                        "seed, success rates pooled over the scored-phase episodes, S = exp(mean_i ln(1 + s_i)) - 1; "
                        "then mean +/- population std over seeds")

    def make_env(self, observation="symbolic", options=None):
        from envgen_jax.envs.craftax.env import CraftaxEnv
        self.read_options(options)
        return CraftaxEnv(observation=observation)

    def score(self, rates):
        return subtask_score(rates)  # an achievement a world gave at the start is not rated there (NaN, left out)

    def achievement_rewards(self):
        from envgen_jax.envs.craftax.env import ACHIEVEMENT_REWARDS  # imports craftax: only when asked
        return dict(ACHIEVEMENT_REWARDS)

    def render(self, configs, path, seed=0, options=None):
        from envgen_jax.envs.craftax.render import save_start_floors
        return save_start_floors(configs, Path(path), seed=seed)


GAME = Craftax()
