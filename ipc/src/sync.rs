//! Mutex access that survives poisoning: a panic in one task must not take every later
//! status query down with it. Shared by the supervisor and every worker.

use std::sync::{Mutex, MutexGuard};

pub fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_is_still_readable() {
        let mutex = std::sync::Arc::new(Mutex::new(7));
        let clone = mutex.clone();
        let _ = std::thread::spawn(move || {
            let _guard = clone.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(mutex.is_poisoned());
        assert_eq!(*locked(&mutex), 7);
    }
}
