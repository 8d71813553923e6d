"""The seed's three rules: measured value, status and advice with numbers. No database."""

from monitoring.rules import Shape, Window, evaluate, overall


def by_rule(window, shape=None):
    return {r.rule: r for r in evaluate(window, shape or Shape())}


def test_high_utilisation_is_ok():
    result = by_rule(Window(utilisation=0.93))["utilisation"]
    assert (result.status, result.display) == ("ok", "93%")


def test_low_utilisation_is_bad_and_says_the_number_and_the_stand_in():
    result = by_rule(Window(utilisation=0.03))["utilisation"]
    assert result.status == "bad"
    assert "3%" in result.advice and "CPU stand-in" in result.advice and "barely uses them" in result.advice


def test_data_wait_is_named_as_the_cause_of_low_utilisation():
    result = by_rule(Window(utilisation=0.7, data_share=0.35, utilisation_source="nvml"))["utilisation"]
    assert result.status == "warn"
    assert "35% of each step waits for input data" in result.advice and "stand-in" not in result.advice


def test_communication_over_the_limit_suggests_topology_aware_placement():
    window = Window(utilisation=0.5, comm_share=0.31, step_time_s=0.52)
    result = by_rule(window, Shape(nodes=2, switches=2))["communication"]
    assert result.status == "bad"
    assert result.advice.startswith("communication is 31% of a 0.52 s step")
    assert "spans 2 switches" in result.advice and "gradient compression" in result.advice


def test_communication_unknown_without_sdk_metrics():
    assert by_rule(Window(utilisation=0.9))["communication"].status == "unknown"


def test_any_swap_is_bad_with_the_amount():
    result = by_rule(Window(swap_bytes=3 << 30, swap_rate=1 << 20), Shape(memory_per_node_mb=4096))["swapping"]
    assert result.status == "bad"
    assert "3.0 GiB" in result.advice and "1.0 MiB/s" in result.advice and "4096 MiB per node" in result.advice


def test_no_swap_is_ok_and_the_worst_rule_decides_overall():
    results = evaluate(Window(utilisation=0.9, comm_share=0.05, swap_bytes=0), Shape())
    assert [r.status for r in results] == ["ok", "ok", "ok"]
    assert overall(results) == "ok"
    assert overall(evaluate(Window(utilisation=0.9, swap_bytes=1), Shape())) == "bad"
