"""Host side of the ILA conformance suite: boot a guest, drive it, judge what it sends."""
