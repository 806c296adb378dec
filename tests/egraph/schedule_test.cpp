// Schedules: saturation to a fixpoint, each limit and what it reports, seq/repeat order.
#include "luminal/egraph/schedule.hpp"

#include <gtest/gtest.h>

#include "egraph/egraph_helpers.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::constant;
using testing::ew;
using testing::input;
using testing::make_attrs;

// a + b -> b + a
Rule commute_add() {
  return {"commute-add", Pattern::op(OpKind::Add, {Pattern::var("a"), Pattern::var("b")}), nullptr,
          [](const Match& m, EGraph& eg) {
            const Attrs& at = eg.attrs_of(m.root_node);
            Attrs swapped = at;
            std::swap(swapped.views[0], swapped.views[1]);
            eg.merge(m.root, eg.add(hlir_op(OpKind::Add), swapped, {m.cls("b"), m.cls("a")}));
          }};
}

// x * 1 -> x
Rule mul_one() {
  return {"mul-one",
          Pattern::op(OpKind::Mul,
                      {Pattern::var("x"), Pattern::op(OpKind::Constant).where([](const Attrs& a) {
                         return a.value == 1.0;
                       })}),
          nullptr, [](const Match& m, EGraph& eg) { eg.merge(m.root, m.cls("x")); }};
}

// Exp2(x) -> also add Exp2(Exp2(x)) as a new value: grows forever.
Rule grow() {
  return {"grow", Pattern::op(OpKind::Exp2, {Pattern::var("x")}), nullptr,
          [](const Match& m, EGraph& eg) {
            eg.add(hlir_op(OpKind::Exp2), eg.attrs_of(m.root_node), {m.root});
          }};
}

TEST(Schedule, SaturateReachesAFixpoint) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId y = input(eg, "y");
  ClassId one = constant(eg, 1.0);
  ClassId xy = ew(eg, OpKind::Add, {x, y});
  ClassId m = ew(eg, OpKind::Mul, {xy, one});
  ClassId yx = ew(eg, OpKind::Add, {y, x});
  SaturationReport r =
      run_schedule(eg, Schedule::saturate(RuleSet{"core", {commute_add(), mul_one()}}));
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_TRUE(r.stopped_in.empty());
  ASSERT_EQ(r.rulesets.size(), 1u);
  const RuleSetStats& st = r.rulesets[0];
  EXPECT_EQ(st.name, "core");
  EXPECT_EQ(st.stop, StopReason::Saturated);
  // 1: commute (both adds) and mul-one merge; 2: nothing new.
  EXPECT_EQ(st.iterations, 2);
  EXPECT_EQ(st.matches, 3u + 3u);  // 2 adds + 1 mul, twice
  EXPECT_EQ(eg.find(xy), eg.find(yx));
  EXPECT_EQ(eg.find(m), eg.find(xy));
  EXPECT_EQ(st.nodes_after, eg.num_nodes());
  EXPECT_EQ(st.classes_after, eg.num_classes());
  EXPECT_EQ(eg.num_classes(), 4u);  // x, y, 1, {x+y, y+x, (x+y)*1}
  EXPECT_FALSE(eg.needs_rebuild());
  EXPECT_GE(r.seconds, st.seconds);
  // Running again changes nothing in one iteration.
  const uint64_t v = eg.version();
  SaturationReport again = run_schedule(eg, Schedule::saturate(RuleSet{"core", {commute_add()}}));
  EXPECT_EQ(again.rulesets[0].iterations, 1);
  EXPECT_EQ(eg.version(), v);
}

TEST(Schedule, RunDoesOneIterationOnTheGraphAsItWas) {
  EGraph eg;
  ClassId e = ew(eg, OpKind::Exp2, {input(eg, "x")});
  SaturationReport r = run_schedule(eg, Schedule::run(RuleSet{"grow", {grow()}}));
  EXPECT_EQ(r.stop, StopReason::Saturated);
  ASSERT_EQ(r.rulesets.size(), 1u);
  EXPECT_EQ(r.rulesets[0].iterations, 1);
  EXPECT_EQ(r.rulesets[0].matches, 1u);  // the new Exp2 is not matched in the same iteration
  EXPECT_EQ(eg.num_nodes(), 3u);
  EXPECT_EQ(eg.nodes_with_op(hlir_op(OpKind::Exp2)).size(), 2u);
  EXPECT_NE(eg.find(e), eg.class_of(eg.nodes_with_op(hlir_op(OpKind::Exp2))[1]));
}

TEST(Schedule, NodeLimitStopsTheWholeSchedule) {
  EGraph eg;
  ew(eg, OpKind::Exp2, {input(eg, "x")});
  int later = 0;
  Rule count{"count", Pattern::op(OpKind::Input), nullptr, [&](const Match&, EGraph&) { ++later; }};
  Schedule s = Schedule::seq({Schedule::saturate(RuleSet{"grow", {grow()}}),
                              Schedule::saturate(RuleSet{"after", {count}})});
  SaturationReport r = run_schedule(eg, s, {.node_limit = 20});
  EXPECT_EQ(r.stop, StopReason::NodeLimit);
  EXPECT_EQ(r.stopped_in, "grow");
  ASSERT_EQ(r.rulesets.size(), 1u);  // "after" never ran
  EXPECT_EQ(r.rulesets[0].stop, StopReason::NodeLimit);
  EXPECT_EQ(later, 0);
  EXPECT_GT(eg.num_nodes(), 20u);
  EXPECT_LE(eg.num_nodes(), 21u);  // applying stopped as soon as the limit was passed
  EXPECT_EQ(to_string(r.stop), "node limit");
  EXPECT_NE(r.to_string().find("grow: "), std::string::npos);
  EXPECT_NE(r.to_string().find("(node limit)"), std::string::npos);
}

TEST(Schedule, IterationLimitNamesTheRuleset) {
  EGraph eg;
  ew(eg, OpKind::Exp2, {input(eg, "x")});
  SaturationReport r =
      run_schedule(eg,
                   Schedule::seq({Schedule::saturate(RuleSet{"core", {commute_add()}}),
                                  Schedule::saturate(RuleSet{"fusion", {grow()}})}),
                   {.iter_limit = 5});
  EXPECT_EQ(r.stop, StopReason::IterLimit);
  EXPECT_EQ(r.stopped_in, "fusion");
  ASSERT_EQ(r.rulesets.size(), 2u);
  EXPECT_EQ(r.rulesets[0].stop, StopReason::Saturated);
  EXPECT_EQ(r.rulesets[0].iterations, 1);
  EXPECT_EQ(r.rulesets[1].iterations, 5);
  EXPECT_EQ(r.rulesets[1].stop, StopReason::IterLimit);
  EXPECT_EQ(eg.num_nodes(), 2u + 5u);  // one new Exp2 a iteration (the others exist already)
  EXPECT_EQ(to_string(StopReason::IterLimit), "iteration limit");
}

TEST(Schedule, TimeLimitStopsALongSaturation) {
  EGraph eg;
  ew(eg, OpKind::Exp2, {input(eg, "x")});
  SaturationReport r =
      run_schedule(eg, Schedule::saturate(RuleSet{"grow", {grow()}}),
                   {.node_limit = 100'000'000, .iter_limit = 1'000'000, .time_limit_s = 0.05});
  EXPECT_EQ(r.stop, StopReason::TimeLimit);
  EXPECT_EQ(r.stopped_in, "grow");
  EXPECT_EQ(r.rulesets[0].stop, StopReason::TimeLimit);
  EXPECT_GT(r.rulesets[0].iterations, 1);
  EXPECT_GE(r.seconds, 0.05);
  EXPECT_EQ(to_string(StopReason::TimeLimit), "time limit");
  EXPECT_EQ(to_string(StopReason::Saturated), "saturated");
  // A spent budget stops before the first iteration.
  SaturationReport z = run_schedule(
      eg,
      Schedule::seq({Schedule::run(RuleSet{"a", {grow()}}), Schedule::run(RuleSet{"b", {grow()}})}),
      {.time_limit_s = 0});
  EXPECT_EQ(z.stop, StopReason::TimeLimit);
  EXPECT_EQ(z.stopped_in, "a");
  ASSERT_EQ(z.rulesets.size(), 1u);
  EXPECT_EQ(z.rulesets[0].iterations, 0);
}

TEST(Schedule, SeqAndRepeatRunInOrder) {
  EGraph eg;
  ClassId x = input(eg, "x");
  std::vector<std::string> log;
  auto logger = [&](std::string name) {
    return RuleSet{name,
                   {{"log-" + name, Pattern::op(OpKind::Input), nullptr,
                     [&log, name](const Match&, EGraph&) { log.push_back(name); }}}};
  };
  Schedule s = Schedule::seq(
      {Schedule::run(logger("a")),
       Schedule::repeat(
           3, Schedule::seq({Schedule::run(logger("b")), Schedule::saturate(logger("c"))})),
       Schedule::repeat(0, Schedule::run(logger("never"))), Schedule::run(logger("d"))});
  SaturationReport r = run_schedule(eg, s);
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "c", "b", "c", "b", "c", "d"}));
  ASSERT_EQ(r.rulesets.size(), 8u);
  EXPECT_EQ(r.rulesets[0].name, "a");
  EXPECT_EQ(r.rulesets[5].name, "b");
  EXPECT_EQ(r.rulesets[7].name, "d");
  EXPECT_EQ(r.rulesets[2].iterations, 1);  // c saturated at once: nothing changed
  std::string text = r.to_string();
  EXPECT_NE(text.find("a: 1 iteration, 1 matches, 1 e-nodes / 1 classes, "), std::string::npos)
      << text;
  EXPECT_NE(text.find(" ms (saturated)\n"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 8);
  EXPECT_EQ(eg.num_nodes(), 1u);
  (void)x;
  testing::expect_error([] { Schedule::repeat(-1, Schedule::seq({})); }, "times must be >= 0");
}

TEST(Schedule, SkipsMatchesWhoseRootWasRemoved) {
  EGraph eg;
  ClassId a = ew(eg, OpKind::Exp2, {input(eg, "a")});
  ClassId b = ew(eg, OpKind::Exp2, {input(eg, "b")});
  std::vector<ClassId> applied;
  Rule kill_next{"kill-next", Pattern::op(OpKind::Exp2, {Pattern::var("x")}), nullptr,
                 [&](const Match& m, EGraph& g) {
                   applied.push_back(m.root);
                   for (ENodeId n : g.nodes_with_op(hlir_op(OpKind::Exp2)))
                     if (n != m.root_node) g.remove(n);
                 }};
  run_schedule(eg, Schedule::run(RuleSet{"r", {kill_next}}));
  EXPECT_EQ(applied, std::vector<ClassId>{a});  // b's match was collected, then skipped
  (void)b;
}

TEST(Schedule, RuleErrorsNameTheRule) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ew(eg, OpKind::Exp2, {x});
  Rule bad{"bad-cast", Pattern::op(OpKind::Exp2, {Pattern::var("x")}), nullptr,
           [](const Match& m, EGraph& g) {
             ClassId c = g.add(hlir_op(OpKind::Cast),
                               make_attrs(DType::F16, {4}, {View::contiguous({4})}), {m.cls("x")});
             g.merge(m.root, c);
           }};
  testing::expect_error(
      [&] {
        run_schedule(eg, Schedule::run(RuleSet{"lowering", {bad}}));
      },
      {"rule 'bad-cast'", "'lowering'", "Exp2", "Cast", "f16[4]", "f32[4]"});
}

}  // namespace
}  // namespace luminal
