//! [`InlineList`]: a short list kept inside the state, for the per-shard and per-key parts of it.

use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};

/// A list of `len` items, at most `N`, stored inline: copying a state allocates nothing, and
/// comparing or hashing it reads only the items in use (the checker copies and hashes every state
/// it generates, millions of them, so an unsharded check pays nothing for the shards it lacks).
#[derive(Debug, Clone, Copy)]
pub struct InlineList<T, const N: usize> {
    len: u8,
    items: [T; N],
}

impl<T: Copy, const N: usize> InlineList<T, N> {
    /// `len` copies of `item`.
    ///
    /// # Panics
    ///
    /// If `len` is above `N`.
    pub fn new(item: T, len: u8) -> InlineList<T, N> {
        assert!(
            usize::from(len) <= N,
            "{len} items in a list of at most {N}"
        );
        InlineList {
            len,
            items: [item; N],
        }
    }
}

impl<T, const N: usize> Deref for InlineList<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items[..usize::from(self.len)]
    }
}

impl<T, const N: usize> DerefMut for InlineList<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[..usize::from(self.len)]
    }
}

impl<T: PartialEq, const N: usize> PartialEq for InlineList<T, N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq, const N: usize> Eq for InlineList<T, N> {}

impl<T: PartialOrd, const N: usize> PartialOrd for InlineList<T, N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        (**self).partial_cmp(&**other)
    }
}

impl<T: Ord, const N: usize> Ord for InlineList<T, N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

/// Hashes the items without their count, which one check never changes.
impl<T: Hash, const N: usize> Hash for InlineList<T, N> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        T::hash_slice(self, state);
    }
}

#[cfg(test)]
mod tests {
    use super::InlineList;

    #[test]
    fn only_the_items_in_use_are_compared() {
        let mut a = InlineList::<u8, 3>::new(0, 2);
        let mut b = InlineList::<u8, 3>::new(0, 2);
        a.items[2] = 7;
        assert_eq!(a, b);
        b[1] = 1;
        assert_ne!(a, b);
        assert_eq!(&*b, &[0, 1]);
    }
}
