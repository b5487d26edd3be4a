//! MT19937 and the bounded integer draws of numpy's legacy `RandomState` (SPEC.md C.2).

/// The 32-bit Mersenne Twister, seeded as `init_genrand(seed)` (the same as C++
/// `std::mt19937(seed)` and numpy's `RandomState(seed)`).
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; 624],
    index: usize,
}

impl std::fmt::Debug for Mt19937 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mt19937").field("index", &self.index).finish_non_exhaustive()
    }
}

impl Mt19937 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u32) -> Mt19937 {
        let mut state = [0u32; 624];
        state[0] = seed;
        for i in 1..624 {
            let prev = state[i - 1];
            state[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Mt19937 { state, index: 624 }
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        for i in 0..624 {
            let y = (self.state[i] & UPPER) | (self.state[(i + 1) % 624] & LOWER);
            let mut v = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 == 1 {
                v ^= 0x9908_b0df;
            }
            self.state[i] = v;
        }
        self.index = 0;
    }

    /// The next tempered 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// Two outputs as one 64-bit value, the first draw in the high word (numpy's order).
    pub fn next_u64(&mut self) -> u64 {
        let hi = u64::from(self.next_u32());
        let lo = u64::from(self.next_u32());
        (hi << 32) | lo
    }

    /// `RandomState.randint(low, high, dtype=uint64)`: masked rejection sampling.
    pub fn randint_u64(&mut self, low: u64, high: u64) -> u64 {
        let rng = high.wrapping_sub(1).wrapping_sub(low);
        if rng == 0 {
            return low;
        }
        let mask = mask_for(rng);
        if rng <= 0xffff_ffff {
            if rng == 0xffff_ffff {
                return low.wrapping_add(u64::from(self.next_u32()));
            }
            loop {
                let v = u64::from(self.next_u32()) & mask;
                if v <= rng {
                    return low + v;
                }
            }
        }
        if rng == u64::MAX {
            return low.wrapping_add(self.next_u64());
        }
        loop {
            let v = self.next_u64() & mask;
            if v <= rng {
                return low + v;
            }
        }
    }

    /// `RandomState.randint(low, high, dtype=uint32)`.
    pub fn randint_u32(&mut self, low: u32, high: u64) -> u32 {
        let rng = (high - 1 - u64::from(low)) as u32;
        if rng == 0 {
            return low;
        }
        if rng == 0xffff_ffff {
            return low.wrapping_add(self.next_u32());
        }
        let mask = mask_for(u64::from(rng)) as u32;
        loop {
            let v = self.next_u32() & mask;
            if v <= rng {
                return low + v;
            }
        }
    }
}

/// The smallest `2^k - 1` that is >= `rng`.
fn mask_for(rng: u64) -> u64 {
    if rng == 0 {
        0
    } else {
        u64::MAX >> rng.leading_zeros()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_reference_outputs() {
        // The 10000th output of std::mt19937 with the default seed 5489 is 4123659995 (C++11).
        let mut mt = Mt19937::new(5489);
        let mut last = 0;
        for _ in 0..10_000 {
            last = mt.next_u32();
        }
        assert_eq!(last, 4_123_659_995);
    }

    #[test]
    fn masks() {
        assert_eq!(mask_for(1), 1);
        assert_eq!(mask_for(5), 7);
        assert_eq!(mask_for((1 << 61) - 3), (1 << 61) - 1);
    }
}
