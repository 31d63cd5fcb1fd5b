"""The seeds a launch form accepts: 0 ... MAX_SEED.

Seeds are stored in 32-bit integer columns and handed to numpy, which refuses negative ones; a
seed outside this range is refused at the form, beside its field, rather than by the database.
"""

MAX_SEED = 2**31 - 1
