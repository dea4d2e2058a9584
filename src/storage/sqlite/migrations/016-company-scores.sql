-- Company answers cached before match scores existed carry no score, and an unscored answer now
-- reads as not found: within the repeat-free window an old real match would turn into a miss. An
-- import clears these answers the same way; the next lookup of each company fills them again, and
-- its billing (the billing cache) is untouched, so a repeat stays free.
DELETE FROM result_cache WHERE kind = 'company';
