"""The word lists rules/v2 reads objects with (formation.rules_v2): function words, object stops, and the
head nouns a pattern accepts. Changing any of them changes rules/v2's output, so they bump its version too."""


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


ARTICLES = _set("a an the my our some his her their")
# Never the first or last word of an object, and never an object: pronouns, deictics, function words, and
# the vague nouns ("idea", "part", "thing") that name nothing on their own.
FUNCTION_WORDS = _set("""
to of in on at for with about from by as into onto over under up out off through across along past behind
beyond toward towards without against among between inside outside upon via and or but so if than then that
this these those it its they them their he him his she her we us you your i me my mine our who what which where
when why how here there not no very really just too also all both each every any some much many more most lot
lots bit part kind sort idea thing things stuff way one ones is are was were be been am do does did have has
had will would can could should a an the again already yet now today everyday day time times something
anything everything nothing someone anyone everyone myself yourself itself themselves ourselves well back home
away around while ever never always sometimes often lately recently finally mix same other another such
own like because whole best worst least rest look
""")
# The object ends before these: prepositions that start an adjunct, time words, conjunctions, numbers.
OBJECT_STOPS = _set("""
with for on at to from by because since until till when while and or but so yesterday today tonight last next
this ago recently again lately now earlier already finally together too as after before during who which that
where if than though although all every tomorrow soon in into over around about near named called just once
twice here there downtown originally two three four five six several few personally actually honestly
everyday daily weekly online instead anyway lol haha early late alone again
""")
# Words ending in "ly" that are nouns, not adverbs: the object may run on over them.
LY_NOUNS = _set("family rally assembly july italy sicily lily ally belly jelly bully supply reply anomaly"
                " butterfly dragonfly firefly monopoly holly molly emily kelly sally")
# A verb phrase (intends_to, learning) ends before these.
PHRASE_STOPS = _set("""
because since until when while and or but so yesterday today tonight tomorrow next this soon someday eventually
after before once if though although one sometime later again too asap lol haha now already right
""")
# Pronoun-like words that make a whole object name nothing wherever they stand in it.
EMPTY_INSIDE = _set("it them this that him her you me us")

ROLE_HEADS = _set("""
nurse teacher doctor engineer developer designer accountant lawyer attorney paralegal analyst banker barista
chef cook waiter waitress bartender server cashier clerk mechanic electrician plumber carpenter firefighter
officer pilot photographer artist painter sculptor potter writer author editor journalist reporter musician
singer dancer actor actress student intern manager director consultant counselor counsellor therapist
psychologist psychiatrist pharmacist dentist hygienist veterinarian vet tech technician assistant receptionist
secretary librarian scientist researcher professor lecturer tutor coach trainer instructor programmer
architect surgeon paramedic midwife caregiver carer nanny babysitter housekeeper cleaner janitor driver
courier farmer gardener landscaper baker butcher tailor seamstress stylist hairdresser barber florist realtor
broker entrepreneur founder ceo cto cfo freelancer contractor homemaker retiree soldier marine sailor
veteran detective guard worker employee supervisor administrator translator interpreter illustrator animator
filmmaker producer podcaster streamer blogger youtuber model athlete coder tester economist biologist chemist
physicist mathematician statistician historian librarian optometrist physiotherapist paramedic dispatcher
practitioner welder machinist lifeguard ranger miner fisherman chaplain pastor priest rabbi imam minister principal
""")
# Family words are roles only with a qualifier ("a stay-at-home mom", "a single parent"), not on their own.
FAMILY_ROLES = _set("mom mum dad mother father parent")
ROLE_QUALIFIERS = _set("stay-at-home single working full-time part-time foster")
NOT_ROLE_STARTS = _set("bit little lot fan big huge kind sort mix part member perfectionist")

# What "I have a/an X", "I got X", "I bought X", "I adopted X" may own: pets, vehicles, homes, instruments,
# devices and a few other belongings. Anything else ("a question", "a meeting", "a feeling") is not property.
OWNABLE_HEADS = _set("""
dog dogs puppy puppies cat cats kitten kittens horse horses pony snake snakes hamster hamsters rabbit rabbits
bunny parrot bird birds goldfish fish turtle tortoise lizard gecko pig ferret chickens chicken goat goats
retriever labrador lab poodle terrier beagle bulldog shepherd husky corgi dachshund chihuahua spaniel
car cars truck van bike bicycle motorcycle motorbike scooter boat kayak canoe rv camper house home apartment
condo flat cabin cottage farm ranch garden piano guitar violin drum drums keyboard ukulele cello camera laptop
computer tablet phone iphone console telescope
""")
PET_NAME_HEADS = _set("dog puppy cat kitten horse pony snake hamster rabbit bunny parrot bird goldfish fish"
                      " turtle tortoise lizard gecko pig ferret retriever labrador poodle terrier beagle husky corgi")

# "went to X", "attended X": ordinary daily places are not events worth a fact.
NOT_EVENTS = _set("""
bed sleep work school home store shop shops supermarket bathroom toilet lunch dinner breakfast town church
office kitchen grocery groceries mall bank place house apartment room
""")
# ... and these are never an event whatever their modifiers ("my sister's place", "my mom's house").
HOME_PLACES = _set("place house apartment room home flat")
# "I ran X" is an event only for races.
RACE_HEADS = _set("marathon race 5k 10k half triathlon relay ultramarathon ultra mile miles")
# "I started X", "I launched X", "I founded X": something that then exists.
STARTED_HEADS = _set("""
blog business company garden podcast channel club group band charity nonprofit shop store website newsletter
project foundation campaign petition tradition page account studio bakery restaurant cafe brand startup
label journal collection series
""")
# "I made X", "I built X", "I painted X": not things one makes in passing.
NOT_CREATED = _set("""
mistake mistakes decision decisions choice choices friends friend progress sense point effort plans plan money
difference call appointment reservation list bed peace fun way time sure mess deal promise comeback noise
move offer impression attempt living team cut playoffs finals list dinner lunch breakfast food coffee tea
mess
""")
# "I joined X", "I'm part of X", "I'm on X": a group one belongs to.
GROUP_HEADS = _set("""
group club team community band choir orchestra organization organisation network program programme church
union association society committee board council league crew collective movement gym class cohort guild
chapter party circle troupe ensemble squad staff faculty federation coalition
""")
NOT_JOINED = _set("conversation call meeting fight protest chat discussion line queue")
# "I'm taking X": learning only when X is a class.
LESSON_HEADS = _set("class classes lesson lessons course courses workshop workshops")

# Capitalised words after "I'm" that are not given names.
NOT_GIVEN_NAMES = _set("""
same over right nobody everyone someone back sorry fine good great okay ok happy sad tired done sure glad here
home ready so just not always still also new american british canadian english irish scottish welsh french
german spanish italian mexican swedish norwegian danish dutch polish russian chinese japanese korean indian
african european asian australian brazilian gay lesbian trans bi straight queer single married in on out up
down there excited exhausted well alright all very really never thinking busy free late early jewish catholic
christian muslim hindu buddhist atheist vegan vegetarian human sober pregnant retired monday tuesday wednesday
thursday friday saturday sunday january february march april may june july august september october november
december mr mrs ms miss dr mom mum dad mother father grandma grandpa nana papa mama auntie babe honey sis bro
""")
TITLES = _set("mr mrs ms miss dr prof")
# Verbs that start a plan after "I'm going to" / "I will" ("I'm going to start therapy"); other verbs there
# are mostly talk ("I'll let you know", "I'll be fine") and propose nothing.
PLAN_VERBS = _set("""
start begin move visit travel go run join apply learn take buy adopt build write paint open launch sign
volunteer call finish quit retire study enroll enrol register attend host book cook bake try switch change
sell rent renovate redo repaint plant grow train practice practise save look
""")
# Titles that end in a full stop without ending the sentence ("Dr. Patel", "St. Mary's").
ABBREVIATIONS = _set("dr mr mrs ms st mt prof jr sr vs")
