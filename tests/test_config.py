"""Config loading: defaults, errors that name the key, --set overrides, task resolution."""

import pytest

from evo import config as config_lib
from evo.config import ConfigError


def _write(tmp_path, text):
    path = tmp_path / "campaign.toml"
    path.write_text(text)
    return path


def test_minimal_config_gets_defaults(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "demo"\ntasks = ["vector_add"]\n')
    config = config_lib.load(path)
    assert config.campaign.name == "demo"
    assert config.campaign.tasks == ("vector_add",)
    assert config.search.max_debug_attempts == 5
    assert config.operators.mode == "offline"
    assert config.budget.max_usd is None


def test_unknown_key_names_section_key_and_allowed_keys(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n[search]\npopulaton = 3\n')
    with pytest.raises(ConfigError) as error:
        config_lib.load(path)
    message = str(error.value)
    assert "search.populaton" in message and "population" in message and "offspring" in message


def test_bad_value_names_key_and_allowed_values(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n[operators]\nmode = "magic"\n')
    with pytest.raises(ConfigError, match=r"operators\.mode.*'llm', 'offline' or 'replay'"):
        config_lib.load(path)


def test_negative_generations_is_refused(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n[search]\ngenerations = -2\n')
    with pytest.raises(ConfigError, match=r"search\.generations.*greater than or equal to 0"):
        config_lib.load(path)


def test_unknown_section_lists_sections(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n[serach]\ngenerations = 2\n')
    with pytest.raises(ConfigError, match=r"unknown section \[serach\].*\[search\]"):
        config_lib.load(path)


def test_offline_mode_requires_seed_with_baseline():
    with pytest.raises(ConfigError, match="campaign.seed_with_baseline"):
        config_lib.from_dict({"campaign": {"name": "x", "seed_with_baseline": False}})


def test_llm_mode_requires_endpoint():
    with pytest.raises(ConfigError, match="operators.base_url"):
        config_lib.from_dict({"campaign": {"name": "x"}, "operators": {"mode": "llm"}})


def test_set_override_parses_toml_literals_and_bare_strings(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n')
    config = config_lib.load(path, ["search.generations=7", "campaign.name=demo",
                                    "campaign.tasks=[\"softmax\"]", "fitness.device=interpreter",
                                    "budget.max_usd=0.5"])
    assert config.search.generations == 7
    assert config.campaign.name == "demo"
    assert config.campaign.tasks == ("softmax",)
    assert config.fitness.device == "interpreter"
    assert config.budget.max_usd == 0.5


def test_set_override_takes_a_list_in_its_natural_forms(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n')
    for text in ("vector_add,softmax", "vector_add, softmax", "[vector_add, softmax]",
                 '["vector_add", "softmax"]'):
        assert config_lib.load(path, [f"campaign.tasks={text}"]).campaign.tasks == (
            "vector_add", "softmax"), text
    assert config_lib.load(path, ["campaign.tasks=vector_add"]).campaign.tasks == ("vector_add",)
    assert config_lib.load(path, ["campaign.name=a,b"]).campaign.name == "a,b"  # not a list key


def test_a_bad_set_override_shows_the_syntax(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"(?s)search\.islands.*--set takes section\.key=value"):
        config_lib.load(path, ["search.islands=zero"])


def test_set_override_goes_through_validation(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"search\.islands"):
        config_lib.load(path, ["search.islands=0"])
    with pytest.raises(ConfigError, match=r"search\.islandz: unknown key"):
        config_lib.load(path, ["search.islandz=2"])
    with pytest.raises(ConfigError, match="section.key=value"):
        config_lib.load(path, ["generations=2"])


def test_missing_file_and_bad_toml_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        config_lib.load(tmp_path / "absent.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        config_lib.load(_write(tmp_path, "[campaign\n"))


def test_unknown_task_lists_known_tasks():
    config = config_lib.from_dict({"campaign": {"name": "x", "tasks": ["vector_ad"]}})
    with pytest.raises(ConfigError, match=r"campaign\.tasks: unknown task 'vector_ad'.*vector_add"):
        config_lib.resolve_tasks(config)


def test_empty_task_list_means_the_whole_suite():
    config = config_lib.from_dict({"campaign": {"name": "x"}})
    names = [task.name for task in config_lib.resolve_tasks(config)]
    assert "vector_add" in names and len(names) == len(set(names))


def test_config_is_frozen():
    config = config_lib.from_dict({"campaign": {"name": "x"}})
    with pytest.raises(Exception):
        config.search.generations = 3


@pytest.mark.parametrize("raw, said", [
    ({"campaign": {"name": "x"}, "search": {"generatons": 3}},
     "search.generatons: unknown key (did you mean 'generations'?); allowed keys in [search]: "),
    ({"campaign": {"name": "x"}, "budget": {"max_dollars": 3}},
     "budget.max_dollars: unknown key; allowed keys in [budget]: "),  # nothing close: no guess
    ({"campaign": {"name": "x"}, "serch": {}},
     "unknown section [serch] (did you mean 'search'?); allowed: [campaign], "),
], ids=["key", "nothing-close", "section"])
def test_an_unknown_key_or_section_says_what_was_meant(raw, said):
    with pytest.raises(ConfigError) as error:
        config_lib.from_dict(raw)
    assert said in str(error.value)


def test_an_unknown_key_in_a_set_override_says_what_was_meant(tmp_path):
    path = _write(tmp_path, '[campaign]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"search\.temprature: unknown key \(did you mean "
                                          r"'temperature'\?\)"):
        config_lib.load(path, ["search.temprature=0.5"])
