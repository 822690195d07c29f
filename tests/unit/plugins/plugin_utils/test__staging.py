"""plugins/plugin_utils/_staging.py: who gets the bundle from the controller and who from a peer."""
from ansible_collections.gcu.topsrider.plugins.plugin_utils._staging import stage_plan


def need(missing=("a.deb", "manifest.json"), key="k", transfer="peers"):
    return {"key": key, "missing": list(missing), "transfer": transfer}


def test_first_batch_one_seed_the_rest_from_it():
    plan = stage_plan({"n1": need(), "n2": need(), "n3": need(), "n4": need()}, {h: "" for h in ("n1", "n2", "n3", "n4")})
    assert plan["controller"] == ["n1"]
    assert plan["sources"] == {"n2": "n1", "n3": "n1", "n4": "n1"}
    assert plan["start"] == ["n1"]


def test_later_batch_fetches_from_earlier_servers_round_robin_and_nothing_from_the_controller():
    serving = {"n1": {"key": "k", "url": "http://a:1"}, "n2": {"key": "k", "url": "http://b:2"},
               "n3": "", "n4": "", "n5": ""}
    plan = stage_plan({"n3": need(), "n4": need(), "n5": need()}, serving)
    assert plan["controller"] == []
    assert plan["sources"] == {"n3": "n1", "n4": "n2", "n5": "n1"}
    assert plan["start"] == []
    assert plan["urls"] == {"n1": "http://a:1", "n2": "http://b:2"}


def test_holders_of_earlier_batches_are_started_when_the_batch_needs_them():
    offers = {"n1": {"key": "k", "url": "http://a:1"}, "n2": {"key": "k", "url": ""}, "n3": {"key": "k", "url": ""},
              "n4": "", "n5": "", "n6": ""}
    plan = stage_plan({"n4": need(), "n5": need(), "n6": need()}, offers)
    assert plan["sources"] == {"n4": "n2", "n5": "n3", "n6": "n1"}
    assert plan["start"] == ["n2", "n3"]
    assert plan["controller"] == []


def test_a_host_that_holds_the_whole_bundle_feeds_the_others_without_the_controller():
    plan = stage_plan({"n1": need(missing=()), "n2": need()}, {"n1": "", "n2": ""})
    assert plan == {"controller": [], "sources": {"n2": "n1"}, "start": ["n1"], "urls": {}}


def test_nothing_missing_nothing_planned():
    plan = stage_plan({"n1": need(missing=()), "n2": need(missing=())}, {"n1": "", "n2": ""})
    assert plan == {"controller": [], "sources": {}, "start": [], "urls": {}}


def test_another_bundle_is_never_a_source():
    # n1 serves another release (or another manifest of it): n2 must not fetch from it.
    plan = stage_plan({"n2": need(key="other")}, {"n1": {"key": "k", "url": "http://a:1"}, "n2": ""})
    assert plan["controller"] == ["n2"]
    assert plan["sources"] == {}


def test_two_bundles_in_one_batch_each_get_one_seed():
    plan = stage_plan({"n1": need(key="a"), "n2": need(key="b"), "n3": need(key="a"), "n4": need(key="b")},
                      {h: "" for h in ("n1", "n2", "n3", "n4")})
    assert plan["controller"] == ["n1", "n2"]
    assert plan["sources"] == {"n3": "n1", "n4": "n2"}


def test_a_failed_host_is_not_a_source():
    # The caller passes only ansible_play_hosts: a failed n1 is not in serving.
    plan = stage_plan({"n3": need()}, {"n3": ""})
    assert plan["controller"] == ["n3"]


def test_transfer_controller_copies_to_every_host_that_lacks_files():
    plan = stage_plan({"n1": need(transfer="controller"), "n2": need(transfer="controller"),
                       "n3": need(missing=(), transfer="controller")}, {"n1": "", "n2": "", "n3": ""})
    assert plan == {"controller": ["n1", "n2"], "sources": {}, "start": [], "urls": {}}


def test_a_host_that_holds_the_bundle_and_serves_is_not_started_again():
    plan = stage_plan({"n1": need(missing=()), "n2": need()}, {"n1": {"key": "k", "url": "http://a:1"}, "n2": ""})
    assert plan == {"controller": [], "sources": {"n2": "n1"}, "start": [], "urls": {"n1": "http://a:1"}}


def test_controller_egress_is_one_bundle_over_a_whole_rollout():
    # 16 hosts in batches of 4, as the role runs them: servers started, then every
    # host of the batch holds the bundle (an offer without a URL until it is started).
    hosts = ["n%d" % i for i in range(1, 17)]
    offers = dict((h, "") for h in hosts)
    from_controller, fed = [], {}
    for start in range(0, 16, 4):
        batch = hosts[start:start + 4]
        plan = stage_plan(dict((h, need()) for h in batch), offers)
        from_controller += plan["controller"]
        for h in plan["start"]:
            offers[h] = {"key": "k", "url": "http://%s" % h}
        for h in batch:
            offers[h] = offers[h] or {"key": "k", "url": ""}
        for client, source in plan["sources"].items():
            assert client != source
            fed[source] = fed.get(source, 0) + 1
    assert from_controller == ["n1"]
    # The seed feeds its batch (3) and one more; every later host feeds at most one.
    assert fed["n1"] == 4 and max(v for h, v in fed.items() if h != "n1") == 1 and len(fed) == 12
