"""Makes the contamination sample: an eval set, a pool, a truth file, calibration pairs.

Run from the repository root:  python sample_data/contamination/make_sample.py
Deterministic: the same files every time (the output is committed).

The eval set holds 12 templated word problems and 8 one-off problems, plus
two planted internal duplicates. The pool holds, for the templated items:
verbatim copies (one re-cased and re-spaced), copies with one word changed,
copies inside a longer forum post, human-style paraphrases, the same
template with new numbers, and for every template a same-topic but
different problem (a hard negative); then 30 unrelated documents.
truth.jsonl lists every planted pair with its kind and the channels that
should catch it. calibration.jsonl holds labelled pairs from 10 other
templates (a paraphrase; two unrelated texts on the same topic, a story and
a different word problem; the same template with new numbers), used to
choose the cosine threshold; it is written into engine/contamination/, since
it is the scan's default calibration and ships inside the package.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
CALIBRATION_FILE = HERE.parents[1] / "engine" / "contamination" / "calibration.jsonl"

# name, question, paraphrase, same-topic different problem, answer(a, b, c)
TEMPLATES = [
    (
        "clips",
        "{name} sold clips to {a} of her friends in April, and then she sold half as many clips "
        "in May. Every clip was packed in a small paper bag that she decorated herself. How many "
        "clips did {name} sell altogether in April and May?",
        "Over two months {name} ran a little clip business: April brought {a} sales to friends, "
        "and May brought only half of that figure. She wrapped each one in a hand-decorated bag. "
        "What total number did she sell across both months?",
        "{name} bought a pack of {c} hair clips and shared them equally among her {b} cousins at "
        "a birthday party in April. Each cousin also received a small paper bag of sweets. How "
        "many clips did each cousin get?",
        lambda a, b, c, d: (
            f"In May she sold {a} / 2 = {a // 2} clips. Altogether she sold "
            f"{a} + {a // 2} = {a + a // 2} clips.",
            a + a // 2,
        ),
    ),
    (
        "babysitting",
        "{name} earns ${a} an hour for babysitting her neighbours' children. Yesterday she only "
        "did {c} minutes of babysitting because the parents came home early from the cinema. She "
        "is paid for exactly the time she worked. How much did she earn yesterday?",
        "Looking after the kids next door pays {name} {a} dollars per hour. The couple got back "
        "from their film sooner than planned, so she was on duty for just {c} minutes, and her "
        "pay is prorated to the minute. What did she take home?",
        "{name} is saving her babysitting money for a new bicycle that costs ${c}. She already "
        "has ${a} in a jar on her desk, and her grandmother promised to add ${b} for her birthday "
        "next month. How much more money does she still need to save?",
        lambda a, b, c, d: (
            f"Per minute she earns {a} / 60 dollars. For {c} minutes she earns "
            f"{a} * {c} / 60 = {a * c // 60} dollars.",
            a * c // 60,
        ),
    ),
    (
        "wallet",
        "{name} is saving money for a new wallet which costs ${c}. {name} has only half of the "
        "money she needs. Her parents decided to give her ${d} for that purpose, and her "
        "grandparents gave her twice as much as her parents. How much more money does {name} "
        "need to buy the wallet?",
        "A wallet priced at {c} dollars is what {name} wants, but she has collected merely fifty "
        "percent of that sum. Mum and dad chip in {d} dollars, while her grandparents contribute "
        "double what the parents gave. How far short is she still?",
        "{name} lost her old wallet at the train station on a rainy Tuesday. Inside were {a} "
        "dollars, two bus tickets and a library card. A kind stranger returned it the next day, "
        "but {b} dollars were missing. How much money was left in the wallet?",
        lambda a, b, c, d: (
            f"She has {c} / 2 = {c // 2}. Grandparents give {2 * d}. She still "
            f"needs {c} - {c // 2} - {d} - {2 * d} = {c - c // 2 - 3 * d}.",
            c - c // 2 - 3 * d,
        ),
    ),
    (
        "reading",
        "{name} is reading a {c}-page book. Yesterday, she was able to read {a} pages and today, "
        "she read twice as many pages as yesterday. If she wants to read half of the remaining "
        "pages tomorrow, how many pages should she read tomorrow to keep to her plan?",
        "There are {c} pages in the novel {name} picked up. She got through {a} of them "
        "yesterday and doubled that amount today. Her plan for tomorrow is to finish one half of "
        "whatever is still unread. How many pages does that come to?",
        "{name} borrowed {b} books from the school library for the summer holidays. Each book has "
        "about {a} pages, and the library allows her to keep them for three weeks before she "
        "must return them or pay a small fine. How many pages will she read in total?",
        lambda a, b, c, d: (
            f"Read so far {a} + {2 * a} = {3 * a}. Remaining {c - 3 * a}. Half is "
            f"{(c - 3 * a) // 2}.",
            (c - 3 * a) // 2,
        ),
    ),
    (
        "grove",
        "There are {c} trees in the grove. Grove workers will plant trees in the grove today. "
        "After they are done, there will be {a} more trees than before, and each new tree needs "
        "{b} litres of water on its first day. How many litres of water do the new trees need "
        "today?",
        "The grove holds {c} trees at the moment. Today the gardeners are adding another {a}, "
        "and every freshly planted tree must receive {b} litres on day one. What volume of water "
        "is needed for the newcomers?",
        "A grove of {c} old oak trees was damaged by a storm last winter. Volunteers cleared {a} "
        "fallen trunks in the spring and sold the wood to pay for {b} young saplings, which were "
        "planted along the northern edge of the park. How many trees stand now?",
        lambda a, b, c, d: (f"{a} new trees need {a} * {b} = {a * b} litres.", a * b),
    ),
    (
        "parking",
        "If there are {a} cars in the parking lot and {b} more cars arrive during the morning, "
        "while {d} cars leave just before lunch, how many cars are in the parking lot after "
        "lunch, assuming that no other cars come or go during the rest of the day?",
        "A car park starts the day with {a} vehicles. Through the morning another {b} pull in, "
        "and shortly before midday {d} drive off. Nothing else changes later. What is the number "
        "of vehicles parked there in the afternoon?",
        "The parking lot behind the supermarket has {a} spaces, and {b} of them are reserved for "
        "parents with small children. On a busy Saturday the manager counted the cars every hour "
        "and wrote the numbers on a clipboard in the office. How many spaces are not reserved?",
        lambda a, b, c, d: (f"{a} + {b} - {d} = {a + b - d} cars.", a + b - d),
    ),
    (
        "chocolates",
        "{name} had {a} chocolates and her sister had {b} chocolates. If they ate {d} chocolates "
        "together at the cinema on Friday evening and shared the rest equally with their two "
        "cousins, how many chocolates does each of the four children get in the end?",
        "Between them, {name} ({a} pieces) and her sister ({b} pieces) own a pile of chocolate. "
        "During a Friday film they eat {d} pieces, then split what remains evenly among "
        "themselves and two cousins. How many pieces end up with each child?",
        "{name} and her sister love chocolate, but their dentist told them to eat less sugar. Now "
        "they keep a chart on the fridge and allow themselves only {a} pieces a week, saving the "
        "wrappers to build a colourful collage for their bedroom wall. How many weeks until they "
        "fill it?",
        lambda a, b, c, d: (
            f"Left {a} + {b} - {d} = {a + b - d}. Each gets {(a + b - d) // 4}.",
            (a + b - d) // 4,
        ),
    ),
    (
        "toys",
        "{name} has {a} toys. For Christmas he got {b} toys each from his mom and dad, and his "
        "grandmother sent him a parcel with {c} more toys. He decided to give away five of his "
        "oldest toys to a charity shop. How many toys does {name} have now?",
        "Starting with {a} toys, {name} received {b} from each parent at Christmas plus a parcel "
        "of {c} from his grandmother. Afterwards he donated five worn-out ones to charity. What "
        "is the size of his toy collection now?",
        "{name} keeps his toys in {b} plastic boxes under the bed. Before Christmas his mom asked "
        "him to sort them into toys to keep and toys to give away, and he spent the whole "
        "afternoon arguing with his little brother about a red fire truck. Who got the truck?",
        lambda a, b, c, d: (f"{a} + 2 * {b} + {c} - 5 = {a + 2 * b + c - 5}.", a + 2 * b + c - 5),
    ),
    (
        "computers",
        "There were {a} computers in the server room. {b} more computers were installed each "
        "day, from Monday to Thursday, and on Friday the technicians removed {d} old machines "
        "that had stopped working. How many computers are now in the server room at the end of "
        "the week?",
        "The server room began the week with {a} machines. Technicians added {b} per day for "
        "four days, Monday through Thursday, and on Friday hauled away {d} broken units. How "
        "many machines remain when the week closes?",
        "The server room in the basement of the school gets very hot in summer. The caretaker "
        "installed {b} fans and a thermometer on the wall, and he checks it every morning at "
        "eight o'clock before the first lesson begins. What temperature did it show on Monday?",
        lambda a, b, c, d: (f"{a} + 4 * {b} - {d} = {a + 4 * b - d}.", a + 4 * b - d),
    ),
    (
        "cupcakes",
        "{name} baked {a} cupcakes for the school bake sale. She sold {b} of them in the first "
        "hour for ${d} each, and then she gave half of the remaining cupcakes to the teachers in "
        "the staff room. How much money did she make in the first hour of the sale?",
        "For a fundraiser at school, {name} made {a} cupcakes. Within sixty minutes {b} were "
        "bought at {d} dollars apiece; later she handed half of the leftovers to staff. What did "
        "those first-hour sales bring in?",
        "{name} tried a new cupcake recipe for the school bake sale, but the oven was too hot and "
        "the first tray burned. She opened the windows, scraped the tray, and baked {a} more with "
        "less sugar, which the teachers said tasted even better. How long did they bake?",
        lambda a, b, c, d: (f"{b} * {d} = {b * d} dollars.", b * d),
    ),
    (
        "train",
        "A train travels {a} kilometres in {b} hours at a constant speed. The driver then has to "
        "stop for {c} minutes at a station to let passengers on and off. At the same speed, how "
        "many kilometres will the train travel in the next five hours of its journey?",
        "Moving steadily, a train covers {a} km every {b} hours. After a {c}-minute station halt "
        "for passengers, it continues at an unchanged pace. What distance does it cover during "
        "the following five hours?",
        "The old train from the coast to the mountains takes {b} hours and stops at {a} small "
        "stations. Tourists love the route because of the views, and the company sells cheap "
        "tickets on weekdays, but the carriages are often crowded in August. Which station is "
        "the busiest?",
        lambda a, b, c, d: (
            f"Speed {a} / {b} = {a // b} km per hour; in 5 hours {5 * (a // b)} km.",
            5 * (a // b),
        ),
    ),
    (
        "garden",
        "{name} planted {a} rows of tomatoes in her garden with {b} plants in each row. Each "
        "plant produced {d} tomatoes, but birds ate ten tomatoes before she could pick them. She "
        "wants to put the rest into boxes. How many tomatoes did {name} pick from her garden?",
        "In her vegetable patch {name} set out {a} rows holding {b} tomato plants apiece. Every "
        "plant yielded {d} fruit, though birds stole ten before harvest. How many tomatoes did "
        "she actually gather?",
        "{name} planted tomatoes in her garden for the first time this spring. She watered them "
        "every evening, tied the stems to wooden sticks, and covered them with a net, but a late "
        "frost in May still damaged {a} of the young plants. Which variety survived best?",
        lambda a, b, c, d: (f"{a} * {b} * {d} - 10 = {a * b * d - 10}.", a * b * d - 10),
    ),
]

# What is planted in the pool for each template, by position.
PLANTS = [
    "verbatim_recased",
    "verbatim",
    "light_edit",
    "light_edit",
    "embedded",
    "embedded",
    "paraphrase",
    "paraphrase",
    "paraphrase",
    "number_changed",
    "number_changed",
    None,
]
EXPECTED = {
    "verbatim": ["ngram", "containment", "embed"],
    "verbatim_recased": ["ngram", "containment", "embed"],
    "light_edit": ["containment", "embed"],
    "embedded": ["containment"],
    "paraphrase": ["embed"],
    "number_changed": ["embed"],
    "internal_duplicate": ["internal"],
}

ONE_OFF = [
    (
        "A rectangular garden is {a} metres long and {b} metres wide. The owner wants to build a "
        "fence around the whole garden and a gate that is {d} metres wide, which needs no fence. "
        "How many metres of fence does the owner have to buy for the garden?",
        lambda a, b, c, d: (f"2 * ({a} + {b}) - {d} = {2 * (a + b) - d}.", 2 * (a + b) - d),
    ),
    (
        "A shop sells notebooks for ${a} each and pens for ${b} each. On Monday the shop sold "
        "{d} notebooks and twice as many pens as notebooks to the students of the nearby school. "
        "How much money did the shop receive on Monday from these sales?",
        lambda a, b, c, d: (f"{a} * {d} + {b} * {2 * d} = {a * d + 2 * b * d}.", a * d + 2 * b * d),
    ),
    (
        "Three friends shared the cost of a holiday cottage for a week. The cottage cost ${a} in "
        "total, and the cleaning fee of ${b} was paid by only one of them because she broke a "
        "lamp. How much did each of the other two friends pay in the end?",
        lambda a, b, c, d: (f"Each pays {a} / 3 = {a // 3}.", a // 3),
    ),
    (
        "A water tank on a farm holds {a} litres when full. On a hot day the animals drink {b} "
        "litres in the morning and {d} litres in the afternoon, and nobody refills the tank until "
        "the evening. How many litres are left in the tank in the evening before refilling?",
        lambda a, b, c, d: (f"{a} - {b} - {d} = {a - b - d}.", a - b - d),
    ),
    (
        "A class of {a} students voted for the destination of their school trip. Exactly {b} "
        "students chose the museum, {d} students chose the science park, and all the other "
        "students chose the beach. How many students voted for the beach as their destination?",
        lambda a, b, c, d: (f"{a} - {b} - {d} = {a - b - d}.", a - b - d),
    ),
    (
        "A printer prints {a} pages per minute when it prints in black and white, but only half "
        "as many pages per minute in colour. A teacher needs {c} colour pages for her lesson "
        "tomorrow morning. How many minutes will the printer need for her colour pages?",
        lambda a, b, c, d: (
            f"Colour speed {a // 2}; {c} / {a // 2} = {c // (a // 2)} minutes.",
            c // (a // 2),
        ),
    ),
    (
        "A baker packs cookies into tins that each hold {a} cookies. On Saturday he baked {b} "
        "trays with {c} cookies on each tray for the market, and every tin he fills is sold for "
        "the same price. How many full tins can the baker fill with Saturday's cookies?",
        lambda a, b, c, d: (
            f"{b} * {c} = {b * c} cookies; {b * c} // {a} = {b * c // a} tins.",
            b * c // a,
        ),
    ),
    (
        "A cyclist rides {a} kilometres on the first day of a tour, {b} kilometres more on the "
        "second day than on the first, and {c} kilometres on the third day when it rains all "
        "afternoon. How many kilometres does the cyclist ride over the three days of the tour?",
        lambda a, b, c, d: (f"{a} + {a + b} + {c} = {2 * a + b + c}.", 2 * a + b + c),
    ),
]

CALIBRATION = [
    (
        "{name} bought {a} packs of pencils for the new school year. Each pack contains {b} "
        "pencils, and she gave {c} pencils to her friends who forgot theirs on the first day. How "
        "many pencils does {name} have left for herself now?",
        "At the start of term {name} purchased {a} pencil packs with {b} pencils in each. On day "
        "one she handed {c} to classmates who had none. How many pencils does she keep?",
        "{name} prefers writing with a fountain pen, but her teacher insists on pencils for maths "
        "tests. She sharpened {a} pencils the night before the exam and still felt nervous about "
        "the fractions section. Did she pass?",
        "{name} has {a} pencils and {b} erasers in her pencil case. Her teacher asks every "
        "student to bring {c} sharpened pencils to the art lesson. How many more pencils must "
        "{name} sharpen?",
    ),
    (
        "A swimming pool holds {a} litres of water. It is being filled by a hose that delivers {b} "
        "litres per minute, and it already contains {c} litres. How many minutes will it take to "
        "fill the pool completely?",
        "The pool's capacity is {a} litres, and {c} litres are in it already. Water flows in from "
        "a hose at {b} litres a minute. How long, in minutes, until it is full?",
        "The public swimming pool closes for cleaning every September. Last year the workers "
        "found {b} lost goggles, a watch and several coins at the bottom, and the manager put them "
        "in a box at the entrance for people to collect. Who took the watch?",
        "A swimming pool charges ${a} for an adult ticket. On Saturday {b} adults and {c} "
        "children visited, and children swim for free. How much money did the pool take on "
        "Saturday?",
    ),
    (
        "A bakery uses {a} kilograms of flour every day. Flour is delivered in sacks of {b} "
        "kilograms. How many sacks does the bakery need for {c} days of baking?",
        "Every day the bakery goes through {a} kg of flour, which arrives in {b} kg sacks. For a "
        "{c}-day period, how many sacks must be ordered?",
        "The bakery on the corner opens at six in the morning and the smell of fresh bread fills "
        "the street. The owner learned to bake from her grandfather and still uses his old wooden "
        "tools. What is her favourite bread?",
        "A bakery sells {a} loaves of bread every morning for ${b} each. In the afternoon it "
        "sells {c} more loaves at half price. How much does the bakery earn from bread in one "
        "day?",
    ),
    (
        "A bus ticket costs ${a} for adults and ${b} for children. A family of two adults and {c} "
        "children takes the bus to the zoo and back. How much do they spend on tickets in total?",
        "Adult fares are {a} dollars and child fares {b} dollars. Two parents and their {c} kids "
        "ride to the zoo and return. What is the family's total fare?",
        "The bus to the zoo was late again on Sunday, and the children were getting restless at "
        "the stop. Their father told them stories about elephants until it finally arrived, {a} "
        "minutes after the timetable said. Which animal did they see first?",
        "A bus can carry {a} passengers. At the first stop {b} people get on and at the second "
        "stop {c} more get on. How many empty seats are left after the second stop?",
    ),
    (
        "{name} has {a} marbles. He loses {b} marbles while playing in the park, and then his "
        "friend gives him three times as many marbles as he lost. How many marbles does {name} "
        "have at the end of the day?",
        "Beginning with {a} marbles, {name} drops {b} of them in the park. A friend then hands "
        "him triple the number he lost. How many marbles does he finish with?",
        "{name} keeps his marble collection in a glass jar on the windowsill. The sunlight makes "
        "the colours glow in the afternoon, and his favourite is a blue one his uncle brought back "
        "from a trip abroad. Where was the trip?",
        "{name} and his brother share {c} marbles so that {name} gets {b} more marbles than his"
        " brother. How many marbles does his brother get?",
    ),
    (
        "One can of paint covers {a} square metres of wall. {name} wants to paint {b} walls, each "
        "{c} square metres in area, with two coats of paint. How many cans of paint does he need "
        "to buy?",
        "{name} plans two coats on {b} walls that measure {c} square metres each. A single can "
        "covers {a} square metres. What number of cans should he purchase?",
        "{name} painted his bedroom a bright yellow last summer, and now he regrets it because the "
        "colour wakes him up too early. His sister says it looks cheerful, but he is already "
        "looking at samples of calm grey. Which colour will he choose?",
        "A painter charges ${a} per wall. {name} hires him to paint {b} walls in the living "
        "room and {c} walls in the kitchen. How much does {name} pay the painter?",
    ),
    (
        "{name} collects stamps. She has {a} stamps from Europe and {b} stamps from Asia. If she "
        "buys {c} more stamps from Africa at a market, what fraction of her collection will be "
        "stamps from Europe?",
        "Among {name}'s stamps are {a} European and {b} Asian ones. At a market she picks up {c} "
        "African stamps. Afterwards, what share of all her stamps comes from Europe?",
        "{name} inherited a stamp album from her great-aunt. Some pages are stuck together, and "
        "she has to steam them apart very carefully so that the old stamps do not tear. One of "
        "them might be worth a lot of money. Is it?",
        "A stamp costs {a} cents. {name} sends {b} letters to her friends and {c} postcards to "
        "her family, each needing one stamp. How many dollars does she spend on stamps?",
    ),
    (
        "A farmer has {a} hens, and each hen lays {b} eggs per week. He sells the eggs in boxes of "
        "{c}. How many full boxes of eggs can he sell in one week?",
        "Each of the farmer's {a} hens produces {b} eggs a week, and eggs are sold in cartons of "
        "{c}. How many full cartons does a week's laying fill?",
        "The farmer's hens escaped through a hole in the fence last night and wandered into the "
        "neighbour's vegetable garden. By morning they had eaten most of the lettuce, and he had "
        "to apologise with a basket of {a} eggs. Was the neighbour pleased?",
        "A farmer sells eggs at the market for ${b} per dozen. On Sunday he brought {a} dozen "
        "eggs and went home with {b} eggs unsold. How much money did he make?",
    ),
    (
        "A cinema has {a} rows with {b} seats in each row. For the evening show {c} tickets were "
        "sold. How many seats were empty during the evening show?",
        "The cinema hall is laid out as {a} rows of {b} seats. {c} tickets went for the evening "
        "screening. How many seats stayed unoccupied?",
        "The cinema in our town still shows films on an old projector, and sometimes the picture "
        "flickers in the middle of a scene. The owner refuses to replace it because he says the "
        "sound of the machine is part of the magic. Do people agree?",
        "A cinema ticket costs ${a}, and popcorn costs ${b}. {c} friends go to the cinema "
        "together and each buys a ticket and one popcorn. How much do they spend in total?",
    ),
    (
        "{name} cycles {a} kilometres to school every day and the same distance back home. He "
        "goes to school {b} days a week. How many kilometres does he cycle in {c} weeks?",
        "The ride from {name}'s house to school is {a} km, and he rides it both ways on each of "
        "the {b} school days per week. What is his total distance over {c} weeks?",
        "{name} got a new bicycle for his birthday, and on the first ride to school the chain "
        "came off twice. His father showed him how to fix it with a small tool that now lives in "
        "his backpack, just in case. Did it happen again?",
        "{name} wants to buy a bicycle that costs ${c}. He saves ${b} every week from his "
        "pocket money. How many weeks will it take him to save enough for the bicycle?",
    ),
]

NAMES = [
    "Natalia",
    "Weng",
    "Betty",
    "Julie",
    "Maria",
    "Aisha",
    "Tomas",
    "Priya",
    "Kenji",
    "Lena",
    "Omar",
    "Sofia",
    "Diego",
    "Hana",
    "Ivan",
    "Zara",
]
TOPICS = [
    "weather",
    "cooking",
    "football",
    "gardening",
    "travel",
    "music",
    "history",
    "astronomy",
    "cycling",
    "photography",
]
BACKGROUND = [
    "Notes on {t}: the season started slowly this year, and most people in the village "
    "waited for the first warm weekend before making any plans. The local paper printed a "
    "long article about it, and the comments section filled up within an hour.",
    "A beginner's guide to {t}. Start small, keep a notebook, and do not buy expensive "
    "equipment until you know what you enjoy. Most experts agree that patience matters more "
    "than talent in the first few months.",
    "Forum thread: what got you into {t}? I was about twelve when my uncle took me along one "
    "Saturday, and I have been hooked ever since. These days I mostly read about it on the "
    "train to work.",
]


def numbers(rng: random.Random) -> dict[str, int]:
    """Gives a (even, so halves are whole), b (small), c (large) and d (at most a/2)."""
    a = 2 * rng.randint(12, 30)
    return {
        "a": a,
        "b": rng.randint(3, 9),
        "c": rng.randint(3 * a + 20, 3 * a + 120) // 2 * 2,
        "d": rng.randint(2, a // 2 - 9),
    }


def answer(worked: tuple[str, int]) -> str:
    """Gives a GSM8K-style answer: the worked steps, then '#### N'."""
    steps, final = worked
    return f"{steps}\n#### {final}"


def change_one_word(text: str, rng: random.Random) -> str:
    """Gives the text with one word in its middle third replaced."""
    words = text.split(" ")
    k = rng.randint(len(words) // 3, 2 * len(words) // 3)
    words[k] = "quickly" if words[k] != "quickly" else "slowly"
    return " ".join(words)


def main() -> None:
    rng = random.Random(20261130)
    eval_rows, pool_rows, truth = [], [], []

    def add_pool(text: str) -> str:
        pid = f"doc-{len(pool_rows):03d}"
        pool_rows.append({"id": pid, "text": text})
        return pid

    for k, (name, question, paraphrase, neighbor, solve) in enumerate(TEMPLATES):
        who = NAMES[k % len(NAMES)]
        n = numbers(rng)
        text = question.format(name=who, **n)
        eid = f"q-{name}"
        eval_rows.append({"id": eid, "question": text, "answer": answer(solve(**n))})
        kind = PLANTS[k]
        planted = None
        if kind == "verbatim":
            planted = text
        elif kind == "verbatim_recased":
            planted = "  " + text.upper().replace(". ", ".\n\n")
        elif kind == "light_edit":
            planted = change_one_word(text, rng)
        elif kind == "embedded":
            planted = (
                f"Posted in Homework help. My little brother brought this home and "
                f"none of us could agree on the answer, so here it is word for word: "
                f"{text} We got three different results at dinner. Any ideas? Thanks "
                f"in advance, and sorry if this is the wrong board."
            )
        elif kind == "paraphrase":
            planted = paraphrase.format(name=who, **n)
        elif kind == "number_changed":
            planted = question.format(name=who, **numbers(rng))
        if planted is not None:
            pid = add_pool(planted)
            truth.append(
                {
                    "eval_id": eid,
                    "match_id": pid,
                    "match_kind": "pool",
                    "kind": kind,
                    "expected_channels": EXPECTED[kind],
                }
            )
        add_pool(neighbor.format(name=NAMES[(k + 5) % len(NAMES)], **numbers(rng)))

    for k, (question, solve) in enumerate(ONE_OFF):
        n = numbers(rng)
        text = question.format(**n)
        eval_rows.append({"id": f"q-oneoff-{k}", "question": text, "answer": answer(solve(**n))})
        if k == 0:  # the same item again, re-cased and re-spaced
            eval_rows.append(
                {
                    "id": f"q-oneoff-{k}-copy",
                    "question": text.lower() + "  ",
                    "answer": answer(solve(**n)),
                }
            )
            truth.append(
                {
                    "eval_id": f"q-oneoff-{k}",
                    "match_id": f"q-oneoff-{k}-copy",
                    "match_kind": "eval",
                    "kind": "internal_duplicate",
                    "expected_channels": EXPECTED["internal_duplicate"],
                }
            )
        if k == 1:  # the same item with one word changed
            eval_rows.append(
                {
                    "id": f"q-oneoff-{k}-edit",
                    "question": change_one_word(text, rng),
                    "answer": answer(solve(**n)),
                }
            )
            truth.append(
                {
                    "eval_id": f"q-oneoff-{k}",
                    "match_id": f"q-oneoff-{k}-edit",
                    "match_kind": "eval",
                    "kind": "internal_duplicate",
                    "expected_channels": EXPECTED["internal_duplicate"],
                }
            )

    for k in range(30):
        add_pool(
            BACKGROUND[k % len(BACKGROUND)].format(t=TOPICS[k % len(TOPICS)]) + f" (entry {k + 1})"
        )

    calibration = []
    for k, (question, paraphrase, neighbor, same_topic) in enumerate(CALIBRATION):
        who = NAMES[(k + 3) % len(NAMES)]
        n, n2 = numbers(rng), numbers(rng)
        original = question.format(name=who, **n)
        calibration.append(
            {"a": original, "b": paraphrase.format(name=who, **n), "label": "paraphrase"}
        )
        calibration.append(
            {"a": original, "b": neighbor.format(name=who, **n), "label": "unrelated"}
        )
        calibration.append(
            {"a": original, "b": same_topic.format(name=who, **n), "label": "unrelated"}
        )
        calibration.append(
            {"a": original, "b": question.format(name=who, **n2), "label": "numbers_changed"}
        )

    for path, rows in (
        (HERE / "eval.jsonl", eval_rows),
        (HERE / "pool.jsonl", pool_rows),
        (HERE / "truth.jsonl", truth),
        (CALIBRATION_FILE, calibration),
    ):
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    print(
        f"wrote {len(eval_rows)} eval items, {len(pool_rows)} pool docs, {len(truth)} "
        f"truth pairs to {HERE}, {len(calibration)} calibration pairs to {CALIBRATION_FILE}"
    )


if __name__ == "__main__":
    main()
