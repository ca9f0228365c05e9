//! "Did you mean": which unknown tag names are close to a known tag (E4, `annotations.md` §6.2).

use super::tag::Tag;

/// The known tag an unknown name `name` is close to, if any.
///
/// With `u` = lowercased name and `k` = a lowercased known tag, `u` is close to `k` when
/// `u == k` (a case slip), or `u` has at least 4 chars and either the optimal-string-alignment
/// distance between `u` and `k` is at most 2 or `u` is a prefix of `k`. Among close tags the one
/// with the smallest distance wins; ties go to the earlier row of the tag table.
pub fn suggest(name: &str) -> Option<Tag> {
    let names = Tag::ALL.map(Tag::name);
    closest(name, &names).map(|index| Tag::ALL[index])
}

/// The index in `table` of the entry closest to `name` under the rule of [`suggest`]; ties go
/// to the lower index.
pub(crate) fn closest(name: &str, table: &[&str]) -> Option<usize> {
    let u: Vec<char> = name.to_lowercase().chars().collect();
    let mut best: Option<(usize, usize)> = None;
    for (index, known) in table.iter().enumerate() {
        let k: Vec<char> = known.to_lowercase().chars().collect();
        let distance = osa_distance(&u, &k);
        let close = u == k || (u.len() >= 4 && (distance <= 2 || k.starts_with(&u)));
        if close && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, index));
        }
    }
    best.map(|(_, index)| index)
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
