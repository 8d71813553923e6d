"""Idle decisions on a virtual clock. No database."""

from monitoring.idle import CANCEL, END, FLAG, NOTHING, OpenEpisode, Policy, decide, trailing_stretch

POLICY = Policy(threshold=0.1, minutes=30)


def series(values, start=0.0, step=60.0):
    return [(start + i * step, v) for i, v in enumerate(values)]


def test_trailing_stretch_starts_after_the_last_busy_point():
    stretch = trailing_stretch(series([0.9, 0.05, 0.02, 0.0]), 0.1)
    assert (stretch.since, stretch.until) == (60.0, 180.0)
    assert trailing_stretch(series([0.0, 0.9]), 0.1) is None


def test_flagged_only_after_the_policy_minutes():
    idle_29 = series([0.0] * 30)  # 29 minutes from the first to the last point
    assert decide(idle_29, None, POLICY, now=29 * 60).action == NOTHING
    decision = decide(series([0.0] * 31), None, POLICY, now=30 * 60)
    assert decision.action == FLAG and decision.cancel_at is None


def test_an_open_episode_is_not_flagged_again():
    episode = OpenEpisode(flagged_at=30 * 60, cancel_at=None)
    assert decide(series([0.0] * 60), episode, POLICY, now=59 * 60).action == NOTHING


def test_cancel_policy_cancels_after_the_grace_period_only():
    policy = Policy(threshold=0.1, minutes=30, cancel=True, grace_minutes=15)
    flag = decide(series([0.0] * 31), None, policy, now=30 * 60)
    assert flag.action == FLAG and flag.cancel_at == 45 * 60
    episode = OpenEpisode(flagged_at=30 * 60, cancel_at=flag.cancel_at)
    assert decide(series([0.0] * 40), episode, policy, now=40 * 60).action == NOTHING
    assert decide(series([0.0] * 46), episode, policy, now=45 * 60).action == CANCEL


def test_busy_again_ends_the_episode_and_no_cancel_follows():
    episode = OpenEpisode(flagged_at=30 * 60, cancel_at=45 * 60)
    assert decide(series([0.0] * 40 + [0.8]), episode, POLICY, now=46 * 60).action == END


def test_a_busy_moment_missed_by_every_pass_still_ends_the_episode():
    episode = OpenEpisode(flagged_at=30 * 60, cancel_at=45 * 60)
    idle_again = series([0.0] * 35 + [0.9] + [0.0] * 15)  # busy at minute 35, idle since minute 36
    assert decide(idle_again, episode, POLICY, now=50 * 60).action == END


def test_a_long_warned_episode_is_not_ended_by_the_window_start():
    """The series only reaches back so far: an idle stretch that starts at the window's edge is not 'busy again'."""
    episode = OpenEpisode(flagged_at=30 * 60, cancel_at=None)
    window = series([0.0] * 50, start=120 * 60)  # hours later, all idle, nothing busy in view
    assert decide(window, episode, POLICY, now=170 * 60).action == NOTHING
