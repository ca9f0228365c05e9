//! The change records of [`TrackedVec`]: which indices a walker that saw the vector at some
//! version is sent.

use super::*;

fn changed<T>(v: &TrackedVec<T>, version: u64, held: usize) -> Vec<usize> {
    v.changes.changed_since(version, held, v.len()).collect()
}

#[test]
fn an_untouched_vector_sends_nothing_but_what_the_walker_does_not_hold() {
    let v: TrackedVec<u32> = (0..40).collect();
    assert!(changed(&v, 0, 40).is_empty());
    assert_eq!(changed(&v, 0, 38), [38, 39]);
}

#[test]
fn one_change_sends_its_chunk_only() {
    let mut v: TrackedVec<u32> = (0..100).collect();
    let seen = v.changes.version;
    *v.get_mut(40).unwrap() += 1;
    assert_eq!(changed(&v, seen, 100), (32..48).collect::<Vec<_>>());
    let seen = v.changes.version;
    *v.find_mut(|x| *x == 7).unwrap() = 70;
    v[99] = 0;
    assert_eq!(
        changed(&v, seen, 100),
        (0..16).chain(96..100).collect::<Vec<_>>()
    );
}

#[test]
fn shifts_send_every_position_from_the_first_shifted_one() {
    let mut v: TrackedVec<u32> = (0..100).collect();
    let seen = v.changes.version;
    v.remove(50);
    assert_eq!(changed(&v, seen, 100), (48..99).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.retain(|x| x % 10 != 3 || *x < 60);
    assert_eq!(v.len(), 95);
    assert_eq!(changed(&v, seen, 99), (48..95).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.insert(0, 1);
    assert_eq!(changed(&v, seen, 95), (0..96).collect::<Vec<_>>());
}

#[test]
fn growth_sends_the_new_tail_and_shrinking_sends_nothing_old() {
    let mut v: TrackedVec<u32> = (0..20).collect();
    let seen = v.changes.version;
    v.push(20);
    v.extend([21, 22]);
    assert_eq!(changed(&v, seen, 20), (16..23).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.truncate(5);
    assert_eq!(changed(&v, seen, 23), (0..5).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.clear();
    assert!(changed(&v, seen, 5).is_empty());
}

#[test]
fn mutable_iteration_sends_everything_and_reads_send_nothing() {
    let mut v: TrackedVec<u32> = (0..40).collect();
    let seen = v.changes.version;
    assert_eq!(v.iter().sum::<u32>(), 780);
    assert!(v.contains(&3) && v[3] == 3 && v.first() == Some(&0));
    assert!(changed(&v, seen, 40).is_empty());
    v.iter_mut().for_each(|x| *x += 1);
    assert_eq!(changed(&v, seen, 40), (0..40).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.as_mut_slice().reverse();
    assert_eq!(changed(&v, seen, 40).len(), 40);
}

#[test]
fn a_clone_or_a_copy_from_json_is_another_vector_equal_to_it() {
    let v: TrackedVec<u32> = (0..3).collect();
    let c = v.clone();
    assert_eq!(v, c);
    assert_ne!(v.changes.offer(0).id, c.changes.offer(0).id);
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(json, "[0,1,2]");
    let back: TrackedVec<u32> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    assert_ne!(back.changes.offer(0).id, v.changes.offer(0).id);
    assert_eq!(
        serde_json::to_value(schemars::schema_for!(TrackedVec<u32>)).unwrap(),
        serde_json::to_value(schemars::schema_for!(Vec<u32>)).unwrap()
    );
}

#[test]
fn drains_appends_and_the_ends_record_what_they_touch() {
    let mut v: TrackedVec<u32> = (0..40).collect();
    let seen = v.changes.version;
    assert_eq!(v.drain(20..22).collect::<Vec<_>>(), [20, 21]);
    assert_eq!(changed(&v, seen, 40), (16..38).collect::<Vec<_>>());
    let seen = v.changes.version;
    v.append(&mut vec![7, 8]);
    assert_eq!(changed(&v, seen, 38), (32..40).collect::<Vec<_>>());
    let seen = v.changes.version;
    *v.first_mut().unwrap() = 1;
    *v.last_mut().unwrap() = 1;
    assert_eq!(
        changed(&v, seen, 40),
        (0..16).chain(32..40).collect::<Vec<_>>()
    );
    let seen = v.changes.version;
    v.drain(..);
    assert!(v.is_empty() && changed(&v, seen, 40).is_empty());
    v.push(3);
    assert_eq!(changed(&v, seen, 0), [0]);
}

#[test]
fn a_map_records_its_entries_by_position_and_reads_like_an_ordered_map() {
    let mut m: TrackedMap<String, u32> = (0..40).map(|i| (format!("k{i}"), i)).collect();
    let changed = |m: &TrackedMap<String, u32>, version, held| -> Vec<usize> {
        m.changes.changed_since(version, held, m.len()).collect()
    };
    let seen = m.changes.version;
    *m.get_mut("k20").unwrap() += 1;
    assert_eq!(changed(&m, seen, 40), (16..32).collect::<Vec<_>>());
    let seen = m.changes.version;
    assert_eq!(m.insert("k3".into(), 0), Some(3));
    assert_eq!(m.insert("new".into(), 1), None);
    assert_eq!(
        changed(&m, seen, 40),
        (0..16).chain(32..41).collect::<Vec<_>>()
    );
    let seen = m.changes.version;
    assert_eq!(m.remove("k35"), Some(35));
    assert_eq!(changed(&m, seen, 41), (32..40).collect::<Vec<_>>());
    assert_eq!(m.keys().last().map(String::as_str), Some("new"));
    let json = serde_json::to_string(&m).unwrap();
    let back: TrackedMap<String, u32> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, m);
    assert_eq!(
        json,
        serde_json::to_string(&m.clone().into_inner()).unwrap()
    );
    assert_ne!(m.clone().changes.offer(0).id, m.changes.offer(0).id);
    assert_eq!(
        serde_json::to_value(schemars::schema_for!(TrackedMap<String, u32>)).unwrap(),
        serde_json::to_value(schemars::schema_for!(std::collections::BTreeMap<String, u32>))
            .unwrap()
    );
}
