//! "Did you mean": which unknown tag names are close to a known tag (E4, `docs/annotations.md` §6.2).

use super::tag::Tag;

/// The known tag an unknown name `name` is close to, if any.
///
/// With `u` = lowercased name and `k` = a lowercased known tag, `u` is close to `k` when
/// `u == k` (a case slip), or `u` starts with `k` (`@requiresConfirmation`,
/// `@humanOnlyVariant`), or `u` has at least 4 chars and
///
/// - the optimal-string-alignment distance between `u` and `k` is at most 2 (`@intnet`), or
/// - `u` is a prefix of `k` (`@warn`), or
/// - `u` is a word-aligned tail of the known tag (`@confirm`, `@affordable`, `@only`),
///
/// or the stem of `u` (`u` without one of the suffixes `ations`, `ation`, `ions`, `ion`,
/// `ing`, `ed`, `es`, `s`) has at least 4 chars and is close by one of the three rules
/// above (`@requireConfirmation`). Among close tags the one with the smallest distance wins;
/// ties go to the earlier row of the tag table.
pub fn suggest(name: &str) -> Option<Tag> {
    let names = Tag::ALL.map(Tag::name);
    closest(name, &names).map(|index| Tag::ALL[index])
}

/// The index in `table` (camelCase names) of the entry closest to `name` under the rule of
/// [`suggest`]; ties go to the lower index.
pub(crate) fn closest(name: &str, table: &[&str]) -> Option<usize> {
    let u: Vec<char> = name.to_lowercase().chars().collect();
    let stem = stem(&u);
    let mut best: Option<(usize, usize)> = None;
    for (index, known) in table.iter().enumerate() {
        let k: Vec<char> = known.to_lowercase().chars().collect();
        let tails = word_tails(known);
        let distance = osa_distance(&u, &k);
        let close = u == k
            || u.starts_with(&k)
            || near(&u, &k, &tails)
            || stem.is_some_and(|s| near(s, &k, &tails));
        if close && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, index));
        }
    }
    best.map(|(_, index)| index)
}

/// The three rules for a name of at least 4 chars: small distance, prefix, word-aligned tail.
fn near(u: &[char], k: &[char], tails: &[Vec<char>]) -> bool {
    u.len() >= 4 && (osa_distance(u, k) <= 2 || k.starts_with(u) || tails.iter().any(|t| t == u))
}

/// The lowercased tails of a camelCase name that start at one of its inner words:
/// `requiresConfirm` → `["confirm"]`.
fn word_tails(camel: &str) -> Vec<Vec<char>> {
    camel
        .char_indices()
        .filter(|&(i, c)| i > 0 && c.is_uppercase())
        .map(|(i, _)| camel[i..].to_lowercase().chars().collect())
        .collect()
}

/// `u` without its first matching suffix, when one matches.
fn stem(u: &[char]) -> Option<&[char]> {
    const SUFFIXES: [&str; 8] = ["ations", "ation", "ions", "ion", "ing", "ed", "es", "s"];
    SUFFIXES.iter().find_map(|suffix| {
        let suffix: Vec<char> = suffix.chars().collect();
        (u.len() > suffix.len() && u.ends_with(&suffix)).then(|| &u[..u.len() - suffix.len()])
    })
}

/// The optimal-string-alignment distance: Levenshtein plus transposition of two adjacent
/// chars (each substring edited at most once).
pub fn osa_distance(a: &[char], b: &[char]) -> usize {
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, cell) in d.iter_mut().step_by(width).enumerate() {
        *cell = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = v;
        }
    }
    d[a.len() * width + b.len()]
}
