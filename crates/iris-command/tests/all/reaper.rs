//! The shared suite on the native backend with the subreaper fallback forced
//! (`ProcessContainment::Reaper`), each test in a child process of its own: becoming a
//! child subreaper is a property of the whole process.

use crate::support::Backend;

whole_suite!(child_suite; Backend::NativeReaper);
