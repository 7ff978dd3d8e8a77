//! The leave-one-set-out protocol (issue 29): what the shipped ranking, its "no tool"
//! threshold and the hybrid fusion are chosen by, and what the headline table reports.
//!
//! Every development set is left out once. The lexical ranking starts from a plain
//! BM25F ([`stock`]: every field weight 1, b 0.75, k1 1.2, words only lower-cased) and
//! takes the [`steps`] one at a time, in order, twice over: at each step the option with
//! the best mean R@1 over the *other* sets is taken, if it beats the current one by more
//! than [`MIN_GAIN`] and puts none of those sets below BM25 (a set that is already below
//! BM25, as the plain BM25F can be, must not fall further). The configuration reached
//! is then measured on the left-out set, next to BM25. A step *survives* when, on every
//! fold that took it, the configuration reached is not below BM25 on the left-out set
//! and undoing that step alone would not have scored better there. The shipped default
//! is the same selection over every set, with the surviving steps only.
#![allow(dead_code, unreachable_pub)] // Each user takes a different subset.

use iris_discovery::relevance;
use iris_discovery::search::{SearchIndex, Tuning};

use super::{Bm25, Case, EvalSet, Metrics, QueryKind, metrics};

/// The smallest gain in mean R@1 over the training sets that takes an option: one
/// query in a few hundred, so a tie or a coin-flip does not change the default.
pub const MIN_GAIN: f64 = 0.002;

/// A query kind with at least this many queries on a left-out set must not fall below
/// BM25 there: a step whose undoing lifts such a kind that is behind loses.
pub const MIN_KIND_QUERIES: usize = 30;

/// The share of answerable intents a "no tool" threshold may refuse on any set.
pub const MAX_FALSE_NONE: f64 = 0.01;

/// The plain BM25F the protocol starts from: the name's words (split on `_ - .` and
/// camelCase), the namespace and group, the tags, the description and the argument
/// names and descriptions as six fields, each of weight 1 and b 0.75, k1 1.2; words
/// lower-cased, no stemming, no stop words, no synonyms, completions, bonuses or tiers.
pub fn stock() -> Tuning {
    Tuning {
        field_weights: [1.0; 6],
        field_b: [0.75; 6],
        k1: 1.2,
        synonym_weight: 0.0,
        prefix_weight: 0.0,
        surface_weight: 0.0,
        verb_object_bonus: 1.0,
        full_name_bonus: 1.0,
        stemming: false,
        stop_words: false,
        named_tier: false,
        thesaurus_groups: u64::MAX,
    }
}

/// How an option sets its step's parameters on a tuning.
pub type Apply = fn(&mut Tuning);

/// One choice the protocol may make: a name and its options, the first of which is the
/// stock value.
pub struct Step {
    /// What the step changes.
    pub name: &'static str,
    /// `(label, apply)`: each option sets the step's parameters on a tuning.
    pub options: Vec<(&'static str, Apply)>,
}

impl Step {
    /// The label of the option `tuning` has, if any option matches it.
    pub fn current(&self, tuning: &Tuning) -> Option<&'static str> {
        self.options
            .iter()
            .find(|(_, apply)| {
                let mut t = *tuning;
                apply(&mut t);
                t == *tuning
            })
            .map(|(label, _)| *label)
    }
}

/// Every step, in the order the protocol tries them.
pub fn steps() -> Vec<Step> {
    vec![
        Step {
            name: "stemming",
            options: vec![
                ("off", |t| {
                    t.stemming = false;
                    t.surface_weight = 0.0;
                }),
                ("on", |t| {
                    t.stemming = true;
                    t.surface_weight = 0.0;
                }),
                ("on, surface form 0.4 on top", |t| {
                    t.stemming = true;
                    t.surface_weight = 0.4;
                }),
            ],
        },
        Step {
            name: "stop words",
            options: vec![
                ("kept", |t| t.stop_words = false),
                ("dropped", |t| t.stop_words = true),
            ],
        },
        Step {
            name: "name weight",
            options: vec![
                ("1", |t| t.field_weights[0] = 1.0),
                ("2", |t| t.field_weights[0] = 2.0),
                ("3", |t| t.field_weights[0] = 3.0),
                ("5", |t| t.field_weights[0] = 5.0),
            ],
        },
        Step {
            name: "group weight",
            options: vec![
                ("1", |t| t.field_weights[1] = 1.0),
                ("0", |t| t.field_weights[1] = 0.0),
                ("3", |t| t.field_weights[1] = 3.0),
            ],
        },
        Step {
            name: "description weight",
            options: vec![
                ("1", |t| t.field_weights[3] = 1.0),
                ("2", |t| t.field_weights[3] = 2.0),
            ],
        },
        Step {
            name: "argument description weight",
            options: vec![
                ("1", |t| t.field_weights[5] = 1.0),
                ("0.5", |t| t.field_weights[5] = 0.5),
            ],
        },
        Step {
            name: "name and description b",
            options: vec![
                ("0.75", |t| {
                    t.field_b[0] = 0.75;
                    t.field_b[3] = 0.75;
                }),
                ("0.3", |t| {
                    t.field_b[0] = 0.3;
                    t.field_b[3] = 0.3;
                }),
            ],
        },
        Step {
            name: "thesaurus",
            options: vec![
                ("off", |t| t.synonym_weight = 0.0),
                ("0.7", |t| t.synonym_weight = 0.7),
            ],
        },
        Step {
            name: "prefix completion",
            options: vec![
                ("off", |t| t.prefix_weight = 0.0),
                ("0.5", |t| t.prefix_weight = 0.5),
            ],
        },
        Step {
            name: "verb-object bonus",
            options: vec![
                ("off", |t| t.verb_object_bonus = 1.0),
                ("15 %", |t| t.verb_object_bonus = 1.15),
            ],
        },
        Step {
            name: "full-name bonus",
            options: vec![
                ("off", |t| t.full_name_bonus = 1.0),
                ("15 %", |t| t.full_name_bonus = 1.15),
            ],
        },
        Step {
            name: "named tier",
            options: vec![
                ("off", |t| t.named_tier = false),
                ("on", |t| t.named_tier = true),
            ],
        },
    ]
}

/// R@1 / R@5 / MRR of a lexical configuration over every case of a set.
pub fn lexical_metrics(set: &EvalSet, tuning: Tuning, cases: &[&Case]) -> Metrics {
    let index = SearchIndex::with_tuning(&set.tools, tuning);
    metrics(&set.tools, cases, |q, k| {
        index.search(q, k).iter().map(|h| h.index).collect()
    })
}

/// R@1 / R@5 / MRR of the plain BM25 baseline over some cases of a set.
pub fn bm25_metrics(set: &EvalSet, cases: &[&Case]) -> Metrics {
    let bm25 = Bm25::new(&set.tools);
    metrics(&set.tools, cases, |q, k| {
        bm25.search(q, k).iter().map(|h| h.index).collect()
    })
}

fn all(set: &EvalSet) -> Vec<&Case> {
    set.cases.iter().collect()
}

/// What the selection reached on some training sets: the tuning and the option each
/// step holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The configuration reached.
    pub tuning: Tuning,
    /// Per step (by name): the option taken, when it differs from the stock one.
    pub taken: Vec<(&'static str, &'static str)>,
    /// The thesaurus groups kept, when the thesaurus or the verb-object bonus is on
    /// (both read it); empty otherwise.
    pub groups: Vec<usize>,
}

/// Whether a tuning reads the thesaurus at all.
fn reads_thesaurus(t: &Tuning) -> bool {
    t.synonym_weight > 0.0 || t.verb_object_bonus > 1.0
}

/// The thesaurus groups a tuning uses, when it reads the thesaurus.
fn groups_of(t: &Tuning) -> Vec<usize> {
    if !reads_thesaurus(t) {
        return Vec::new();
    }
    (0..iris_discovery::search::thesaurus_groups().len())
        .filter(|&g| t.uses_group(g))
        .collect()
}

/// The greedy selection over `training` sets, trying only the steps named in `allowed`
/// (every step when `None`) and the thesaurus groups in `groups` (bit `g` for group
/// `g`). When the configuration reached reads the thesaurus, each of its groups in turn
/// is then dropped unless dropping it lowers the mean R@1 over the training sets: a
/// group stays only where it helps. See the [module documentation](self).
pub fn select(training: &[&EvalSet], allowed: Option<&[&str]>, groups: u64) -> Choice {
    let steps = steps();
    let bm25: Vec<f64> = training
        .iter()
        .map(|s| bm25_metrics(s, &all(s)).at1)
        .collect();
    let at1 = |tuning: Tuning| -> Vec<f64> {
        training
            .iter()
            .map(|s| lexical_metrics(s, tuning, &all(s)).at1)
            .collect()
    };
    // The mean, and whether each set is at or above the lower of BM25 and where the
    // current configuration has it: a step may not put a set below BM25, nor sink one
    // that is below already. (Requiring every set at BM25 outright refused every step
    // once one set started below it: no single step could lift that set alone.)
    let score = |tuning: Tuning, floor: &[f64]| -> (f64, bool) {
        let at1 = at1(tuning);
        let mean = at1.iter().sum::<f64>() / at1.len().max(1) as f64;
        let above = at1.iter().zip(floor).all(|(a, f)| a >= f);
        (mean, above)
    };
    let floor_of = |tuning: Tuning| -> Vec<f64> {
        at1(tuning)
            .iter()
            .zip(&bm25)
            .map(|(a, b)| a.min(*b))
            .collect()
    };
    let mut tuning = stock();
    tuning.thesaurus_groups = groups;
    let mut floor = floor_of(tuning);
    let (mut best, _) = score(tuning, &floor);
    for _pass in 0..2 {
        for step in &steps {
            if allowed.is_some_and(|a| !a.contains(&step.name)) {
                continue;
            }
            let mut pick = None;
            for (_, apply) in &step.options {
                let mut candidate = tuning;
                apply(&mut candidate);
                if candidate == tuning {
                    continue;
                }
                let (mean, above) = score(candidate, &floor);
                if above && mean > best + MIN_GAIN && pick.is_none_or(|(m, _)| mean > m) {
                    pick = Some((mean, candidate));
                }
            }
            if let Some((mean, candidate)) = pick {
                best = mean;
                tuning = candidate;
                floor = floor_of(tuning);
            }
        }
    }
    if reads_thesaurus(&tuning) {
        for g in groups_of(&tuning) {
            let mut candidate = tuning;
            candidate.thesaurus_groups &= !(1 << g);
            let (mean, above) = score(candidate, &floor);
            if above && mean > best {
                best = mean;
                tuning = candidate;
                floor = floor_of(tuning);
            }
        }
    }
    let base = stock();
    let taken = steps
        .iter()
        .filter(|s| s.current(&tuning) != s.current(&base))
        .map(|s| (s.name, s.current(&tuning).unwrap_or("?")))
        .collect();
    Choice {
        groups: groups_of(&tuning),
        tuning,
        taken,
    }
}

/// `tuning` with one step back at its stock option.
pub fn undo(tuning: Tuning, step: &str) -> Tuning {
    let mut t = tuning;
    if let Some(s) = steps().into_iter().find(|s| s.name == step) {
        (s.options[0].1)(&mut t);
    }
    t
}

/// One left-out fold: the set left out, what the other sets chose, and its numbers on
/// the left-out set per query kind (`None` is every query).
#[derive(Debug, Clone)]
pub struct Fold {
    /// The set left out.
    pub set: String,
    /// What the other sets chose.
    pub choice: Choice,
    /// `(kind, BM25, chosen)` on the left-out set; the first row is every query.
    pub rows: Vec<(Option<QueryKind>, Metrics, Metrics)>,
    /// Steps the fold took that lost on the left-out set: undoing the step alone
    /// scored better there (on every query, or on a kind of at least
    /// [`MIN_KIND_QUERIES`] queries that is below BM25), or the configuration reached is
    /// below BM25.
    pub lost: Vec<&'static str>,
    /// Thesaurus groups the fold kept that lost on the left-out set: dropping the
    /// group alone scored better there.
    pub lost_groups: Vec<usize>,
}

/// Every fold of the protocol over `sets`, trying only the `allowed` steps and
/// thesaurus `groups`.
pub fn folds(sets: &[&EvalSet], allowed: Option<&[&str]>, groups: u64) -> Vec<Fold> {
    sets.iter()
        .enumerate()
        .map(|(i, left_out)| {
            let training: Vec<&EvalSet> = sets
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, s)| *s)
                .collect();
            let choice = select(&training, allowed, groups);
            let mut rows = Vec::new();
            let every = all(left_out);
            rows.push((
                None,
                bm25_metrics(left_out, &every),
                lexical_metrics(left_out, choice.tuning, &every),
            ));
            for kind in QueryKind::ALL {
                let cases: Vec<&Case> = every.iter().copied().filter(|c| c.kind == kind).collect();
                rows.push((
                    Some(kind),
                    bm25_metrics(left_out, &cases),
                    lexical_metrics(left_out, choice.tuning, &cases),
                ));
            }
            let (bm25, chosen) = (rows[0].1.at1, rows[0].2.at1);
            // Kinds with enough queries to judge that the configuration put below BM25.
            let behind: Vec<(QueryKind, f64)> = rows
                .iter()
                .filter_map(|(kind, b, c)| match kind {
                    Some(k) if b.n >= MIN_KIND_QUERIES && c.at1 < b.at1 => Some((*k, c.at1)),
                    _ => None,
                })
                .collect();
            let lost = choice
                .taken
                .iter()
                .filter(|(step, _)| {
                    let undone = undo(choice.tuning, step);
                    chosen < bm25
                        || lexical_metrics(left_out, undone, &every).at1 > chosen
                        || behind.iter().any(|&(kind, at1)| {
                            let cases: Vec<&Case> =
                                every.iter().copied().filter(|c| c.kind == kind).collect();
                            lexical_metrics(left_out, undone, &cases).at1 > at1
                        })
                })
                .map(|(step, _)| *step)
                .collect();
            let lost_groups = choice
                .groups
                .iter()
                .copied()
                .filter(|&g| {
                    let mut without = choice.tuning;
                    without.thesaurus_groups &= !(1 << g);
                    lexical_metrics(left_out, without, &every).at1 > chosen
                })
                .collect();
            Fold {
                set: left_out.name.clone(),
                choice,
                rows,
                lost,
                lost_groups,
            }
        })
        .collect()
}

/// The steps that survive the folds: taken by at least one fold and lost on none.
pub fn survivors(folds: &[Fold]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for fold in folds {
        for (step, _) in &fold.choice.taken {
            if !out.contains(step) && folds.iter().all(|f| !f.lost.contains(step)) {
                out.push(step);
            }
        }
    }
    out
}

/// The thesaurus groups that survive the folds (as a mask): kept by at least one fold
/// and lost on none.
pub fn surviving_groups(folds: &[Fold]) -> u64 {
    let mut mask = 0u64;
    for fold in folds {
        for &g in &fold.choice.groups {
            if folds.iter().all(|f| !f.lost_groups.contains(&g)) {
                mask |= 1 << g;
            }
        }
    }
    mask
}

/// The whole protocol: the first round over every step, the surviving steps, the
/// second round's folds (the headline) and the default chosen over every set.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Folds of the first round (every step allowed).
    pub first: Vec<Fold>,
    /// The steps that survived the first round.
    pub survivors: Vec<&'static str>,
    /// The thesaurus groups that survived the first round (bit `g` for group `g`).
    pub groups: u64,
    /// Folds of the second round, with only the survivors allowed: the left-out table.
    pub folds: Vec<Fold>,
    /// The selection over every set with only the survivors: the shipped default.
    pub default: Choice,
}

/// Runs the protocol over `sets`.
pub fn run(sets: &[&EvalSet]) -> Outcome {
    // One round of choices, then one round that measures the survivors. Repeating the
    // elimination until nothing loses was tried: with the thesaurus gone the plain
    // BM25F itself falls below BM25 on `bfcl-simple`, and every step goes.
    let first = folds(sets, None, u64::MAX);
    let survivors = survivors(&first);
    let groups = surviving_groups(&first);
    let folds = folds(sets, Some(&survivors), groups);
    let default = select(sets, Some(&survivors), groups);
    Outcome {
        first,
        survivors,
        groups,
        folds,
        default,
    }
}

/// The top hit's catalog-independent [`relevance`] for every case of `set` under
/// `tuning` (`None`: no hit at all), in case order.
pub fn top_relevance(set: &EvalSet, tuning: Tuning) -> Vec<Option<f64>> {
    let index = SearchIndex::with_tuning(&set.tools, tuning);
    set.cases
        .iter()
        .map(|c| {
            index
                .search(&c.query, 1)
                .first()
                .map(|h| relevance(h.score, set.tools.len()))
        })
        .collect()
}

/// The highest threshold (two decimals, rounded down) that refuses at most
/// [`MAX_FALSE_NONE`] of the answerable intents of every set, given each set's top
/// relevances. An intent with no hit at all is refused whatever the threshold.
pub fn threshold(per_set: &[Vec<Option<f64>>]) -> f64 {
    per_set
        .iter()
        .map(|tops| {
            let allowed = (tops.len() as f64 * MAX_FALSE_NONE).floor() as usize;
            let no_hit = tops.iter().filter(|t| t.is_none()).count();
            let mut scores: Vec<f64> = tops.iter().flatten().copied().collect();
            scores.sort_by(f64::total_cmp);
            // Refusing the `k` weakest hits costs `no_hit + k` intents.
            let k = allowed.saturating_sub(no_hit);
            scores.get(k).copied().unwrap_or(0.0)
        })
        .fold(f64::INFINITY, f64::min)
        .min(1e6)
        .mul_add(100.0, 0.0)
        .floor()
        / 100.0
}

/// The share of `tops` a threshold refuses (no hit, or a top relevance below it).
pub fn false_none(tops: &[Option<f64>], threshold: f64) -> f64 {
    let refused = tops
        .iter()
        .filter(|t| t.is_none_or(|r| r < threshold))
        .count();
    refused as f64 / tops.len().max(1) as f64
}

/// The "no tool" threshold by the nested rule: [`threshold`] over the sets, lowered by
/// the margin the same rule needed to carry over to a set it had not seen. Each set is
/// left out in turn: the threshold of the others minus the highest threshold the
/// left-out set allows alone (its own [`threshold`]) is how much the rule overshot
/// there; the margin is the largest such overshoot (0 when it never overshoots). With
/// one set there is nothing to leave out, and the margin is 0.
///
/// The plain rule took the other sets' weakest correct hits as the floor for any
/// catalog; on the fixture left out that floor was too high (2.3 % of its answerable
/// intents refused). The nested rule measures, on the sets it may see, how far that
/// floor moves from one catalog to the next, and keeps that much below it.
pub fn nested_threshold(per_set: &[Vec<Option<f64>>]) -> f64 {
    let all = threshold(per_set);
    if per_set.len() < 2 {
        return all;
    }
    let margin = (0..per_set.len())
        .map(|j| {
            let others: Vec<Vec<Option<f64>>> = per_set
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != j)
                .map(|(_, tops)| tops.clone())
                .collect();
            threshold(&others) - threshold(&per_set[j..=j])
        })
        .fold(0.0_f64, f64::max);
    // Two decimals, like the thresholds themselves (rounded to undo float noise).
    (((all - margin) * 100.0).round() / 100.0).max(0.0)
}
