//! Every fixture component under `tests/fixtures/plugins/` has a named
//! test: the test that exercises it is named here after the fixture, and
//! `foreach_fixture!` (generated from that directory at build time) fails
//! the build for a fixture without one.

pub(crate) use crate::bad_plugins::component_with_an_import_roost_does_not_provide as missing_import;
pub(crate) use crate::conformance::a_0_1_0_plugin_loads_with_default_annotations as legacy_v0_1_0;
pub(crate) use crate::conformance::bench_marker_copies_have_their_own_tools as bench_marker;
pub(crate) use crate::conformance::rust_plugin_conforms as conformance_rs;
pub(crate) use crate::egress::a_granted_origin_gets_its_response as egress;
pub(crate) use crate::hooks::a_hook_on_the_sdk_rewrites_observes_and_contributes as sdk_hook;
pub(crate) use crate::hooks::allow_runs_the_call_and_the_hook_adds_to_the_prompt as hook_fixture;
pub(crate) use crate::host_escapes::host_work_is_bounded_by_the_call as schema_bomb;
pub(crate) use crate::host_escapes::host_work_is_bounded_by_the_call as tool_flood;
pub(crate) use crate::host_escapes::impostor_tool_names_are_refused_at_load as impostor;
pub(crate) use crate::limits::infinite_loop_stops_at_the_deadline as limits;
pub(crate) use crate::sandbox::an_unlisted_route_is_refused_by_the_fixture as hostile;
pub(crate) use crate::skills::run_skill_is_sandboxed_scoped_and_bounded as skill_fixture;

macro_rules! assert_fixture_tested {
    ($name:ident) => {
        #[allow(unused_imports)]
        use self::$name as _;
    };
}

roost_tests::foreach_fixture!(assert_fixture_tested);
