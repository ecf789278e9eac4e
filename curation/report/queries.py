"""The SQL each section of a run's report asks its catalog."""

FUNNEL = """\
select 'corpus rows' as stage, (select count(*) from tasks) + (select count(*) from load_errors) as tasks
union all select 'loaded', count(*) from tasks
union all select 'kept by Pipeline 1', count(*) from p1_results where decision = 'keep'
union all select 'judged', count(*) from verdicts where verdict <> 'unjudgeable'
union all select 'accepted', count(*) from verdicts where verdict in ('accept', 'issue_rewritten')"""
STRENGTHENED = "\nunion all select 'strengthened', count(*) from strengthening where status = 'repaired'"

# reject_reasons, verdict_shares and probe_survival are the catalog's named views (curation.store.views)
REJECT_REASONS = """\
select source, reason, infrastructure, tasks, round(share_of_source, 3) as share_of_source from reject_reasons
order by source, tasks desc, reason"""

VERDICTS_PER_SOURCE = """\
select source, sum(tasks) as judged,
  round(coalesce(sum(tasks) filter (where verdict in ('accept', 'issue_rewritten')), 0) / sum(tasks), 3) as accepted,
  round(coalesce(sum(tasks) filter (where verdict = 'too_loose'), 0) / sum(tasks), 3) as too_loose,
  round(coalesce(sum(tasks) filter (where verdict = 'over_restrictive'), 0) / sum(tasks), 3) as over_restrictive,
  round(coalesce(sum(tasks) filter (where verdict = 'gold_wrong'), 0) / sum(tasks), 3) as gold_wrong,
  round(coalesce(sum(tasks) filter (where verdict = 'unjudgeable'), 0) / sum(tasks), 3) as unjudgeable
from verdict_shares group by source order by source"""

VERDICTS = "select instance_id, verdict, judge, len(evidence) as cited_probes from verdicts order by verdict, instance_id"

# who gave the verdicts: a judge model, the scripted test double, or none (executed probes alone)
JUDGES = """\
select judge, case when judge = 'none' then 'none: verdicts from the executed probes alone'
  when judge = 'scripted' then judge_model || ': the shipped test double, not a model' else judge_model end as judged_by,
  count(*) as tasks from verdicts group by all order by all"""

SURVIVAL_PER_OPERATOR = """\
select kind, operator, sum(probes) as probes, sum(survived) as survived, round(sum(survived) / sum(probes), 3) as survival
from probe_survival group by kind, operator order by kind, survival desc, operator"""

# a survivor is confirmed (an input tells it from gold: too-loose evidence) or likely equivalent (none found: no evidence)
PROBES_PER_TASK = """\
select instance_id,
  count(*) filter (where kind = 'plausible_wrong') as wrong_probes,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1) as wrong_survived,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1 and distinguishing is not null) as confirmed,
  count(*) filter (where kind = 'plausible_wrong' and reward = 1 and likely_equivalent) as likely_equivalent,
  count(*) filter (where kind = 'correct_alternative') as correct_probes,
  count(*) filter (where kind = 'correct_alternative' and reward = 0) as correct_rejected
from probes group by instance_id order by instance_id"""

SLOWEST_RUNS = """\
select instance_id, tree, attempt, round(durations['tests'], 2) as seconds from runs
where durations['tests'] is not null order by seconds desc, instance_id limit 10"""

FLAKY_TESTS = """\
select instance_id, unnest(flaky) as test_id from p1_results where len(flaky) > 0 order by all"""

LOAD_ERRORS = "select source, stage, field, location, message from load_errors order by all"

# what the latest run of a schedule (``swedeck serve``) found new, changed, retried or unchanged
LATEST_RUN = """\
select change, count(*) as tasks from increments
where flow_run = (select flow_run from increments order by started desc limit 1) group by change order by change"""

INFRA_ERRORS = """\
select instance_id, reason, stage, detail from p1_results where infrastructure order by instance_id"""

REJECTED_TASKS = """\
select reason, count(*) as tasks, list(instance_id order by instance_id) as instance_ids from p1_results
where decision = 'reject' group by reason order by tasks desc, reason"""

# one row per loaded task: where it ended, and what each later stage found
TASK_INDEX = """\
select t.instance_id, t.source, r.decision, r.reason, v.verdict,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward < 1) as wrong_killed,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward = 1 and p.distinguishing is not null) as confirmed,
  count(p.probe_id) filter (where p.kind = 'plausible_wrong' and p.reward = 1 and p.likely_equivalent) as likely_equivalent,
  count(p.probe_id) filter (where p.kind = 'correct_alternative' and p.reward < 1) as alternatives_rejected{strengthening}
from tasks t left join p1_results r using (run, instance_id) left join verdicts v using (run, instance_id)
  left join probes p using (run, instance_id){strengthening_join}
group by all order by t.instance_id"""

# what each task's view reads (text columns, one query per table for the whole run)
TASK_DETAIL = """\
select t.instance_id, t.source, t.repo, t.problem_statement, r.decision, r.reason, r.stage, r.detail, r.fail_to_pass,
  len(r.pass_to_pass) as pass_to_pass, r.flaky, r.gold_failing, r.binding_assertions, r.label_disagreements, r.runs
from tasks t left join p1_results r using (run, instance_id) order by t.instance_id"""
RUN_LOGS = "select instance_id, tree, attempt, outcome, log_path from runs order by instance_id, tree, attempt"
PROBE_DETAIL = """\
select instance_id, probe_id, kind, origin, operator, description, patch, reward, reason, decided_by, differing,
  distinguishing, likely_equivalent, differential_tried, log_path from probes order by instance_id, kind desc, reward desc, probe_id"""
VERDICT_DETAIL = """\
select instance_id, verdict, q1_gold_fixes_issue, q2_tests_grade_issue, q3_issue_states_requirements, evidence, rewritten_issue,
  rationale, judge, judge_model, transcript_path, detail from verdicts"""
STRENGTHENING_DETAIL = "select instance_id, status, reason, survivors, killed, tests, judge_session from strengthening"
