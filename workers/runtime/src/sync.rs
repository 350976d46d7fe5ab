//! Mutex access that survives poisoning: a panic in one task must not take every later
//! status query down with it.

use std::sync::{Mutex, MutexGuard};

pub fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
