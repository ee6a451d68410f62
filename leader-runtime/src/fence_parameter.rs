//! The compiler's check of a `#[fenced]` function's fence parameter: the macro finds the
//! parameter by its type's name, and has the compiler confirm that the type is this crate's
//! [`Fence`] (or [`ShardFence`], for the name `ShardFence`), so a type of the application's own with `role()` and `token()` (say, one holding
//! a token read from `leader_status`) cannot stand in for a granted fence.

use crate::{Fence, ShardFence};

/// Implemented only for [`Fence`] and `&Fence`.
#[diagnostic::on_unimplemented(
    message = "a `#[fenced]` function's fence parameter must be leader-runtime's `Fence`, and this `{Self}` is another type",
    label = "this must be `leader_runtime::Fence` or `&leader_runtime::Fence`",
    note = "only the `Fence` a grant gave the tick (`tick.fence()`) proves leadership to \
            `leader_fence`; another type with `role()` and `token()` proves nothing"
)]
pub trait FenceParameter: sealed::Sealed {}

impl FenceParameter for Fence {}
impl FenceParameter for &Fence {}

/// Implemented only for [`ShardFence`] and `&ShardFence`: the fence parameter `#[fenced]`
/// found by the type name `ShardFence`.
#[diagnostic::on_unimplemented(
    message = "a `#[fenced]` function's shard fence parameter must be leader-runtime's `ShardFence`, and this `{Self}` is another type",
    label = "this must be `leader_runtime::ShardFence` or `&leader_runtime::ShardFence`",
    note = "only the `ShardFence` of a shard's grant proves that shard to `leader_fence`"
)]
pub trait ShardFenceParameter: sealed::Sealed {}

impl ShardFenceParameter for ShardFence {}
impl ShardFenceParameter for &ShardFence {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Fence {}
    impl Sealed for &crate::Fence {}
    impl Sealed for crate::ShardFence {}
    impl Sealed for &crate::ShardFence {}
}

/// Compiles only for a [`FenceParameter`]; `#[fenced]` calls it on its fence parameter.
#[inline(always)]
pub fn assert_fence_parameter<T: FenceParameter>(_: &T) {}

/// Compiles only for a [`ShardFenceParameter`]; `#[fenced]` calls it on a `ShardFence`
/// parameter.
#[inline(always)]
pub fn assert_shard_fence_parameter<T: ShardFenceParameter>(_: &T) {}
