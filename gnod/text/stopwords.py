"""Most frequent function words per language, keyed by Snowball language name.

Used for two things:

* language detection (`gnod.text.language`): how many tokens of a text are
  function words of each language is a cheap and surprisingly strong signal;
* dropping function words from natural-language queries.

Every word is lowercase, without apostrophes or hyphens, so that it is one token
as `gnod.text.analyzer.tokenize` produces them (except Hindi/Nepali words with vowel
signs, which that tokenizer currently splits).  Lists are deliberately short (the
few dozen words that make up a large share of running text), not exhaustive
"stop lists".
"""

from __future__ import annotations

from collections.abc import Iterable


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


STOPWORDS: dict[str, frozenset[str]] = {
    "english": _words(
        """
        the of and to a in is it that for on with as was are be by this from at
        or an not but have has had were which their they there been can will
        would should could may might must do does did its into than then them
        these those what when where who whom whose why how all any each both
        more most other some such no nor only own same so too very just also
        about above after again against before below between during through
        under until over out up down off once here further while if because
        i me my we our you your he him his she her hers us being having
        doing myself yourself itself themselves am
        """
    ),
    "german": _words(
        """
        der die das und ist nicht ein eine einen einem einer eines zu den dem
        des mit von auf für im in sich es auch als an aus bei nach wie wird
        werden wurde kann können oder aber wenn dass so noch nur vor um über
        sind war hat haben sein ich du er sie wir ihr man mir mich dir dich
        uns euch ihm ihn ihnen diese dieser dieses diesem diesen durch bis
        zum zur am vom beim sehr schon hier dann da doch mehr alle alles
        keine kein nichts ohne gegen unter zwischen wo was wer warum also ob
        seine ihre ihren ihrem jede jeder jedes wann welche welcher welches
        wieso weshalb woher wohin muss musste soll sollte darf könnte würde
        mein meine meinen
        """
    ),
    "french": _words(
        """
        le la les de des du un une et est en à au aux dans pour par sur avec
        ne pas que qui ce cette ces se sa son ses il elle ils elles on nous
        vous je tu me te leur leurs mais ou où donc car ni plus moins très
        tout tous toute toutes être avoir été sont ont fait comme sans sous
        entre vers chez aussi bien peut y en lui eux même autre autres quel
        quelle quels quelles si qu l d c j n s
        """
    ),
    "spanish": _words(
        """
        el la los las de del un una unos unas y o e u que en es son por para
        con sin se su sus lo al le les no sí como más pero muy ya este esta
        estos estas ese esa esos esas eso esto ha han hay ser está están fue
        era sobre entre también cuando donde dónde qué cómo quien quién cual
        cuál todo todos toda todas otro otra otros otras mi mis tu tus yo él
        ella ellos ellas nosotros usted ustedes me te nos desde hasta hacia
        porque pues si ni
        """
    ),
    "portuguese": _words(
        """
        o a os as um uma uns umas de do da dos das em no na nos nas e é que
        para por com sem se ao aos à às não sim como mais mas muito já este
        esta estes estas esse essa esses essas isso isto ele ela eles elas
        seu sua seus suas meu minha eu você vocês nós foi ser são está estão
        tem têm há pelo pela pelos pelas entre sobre também quando onde quem
        qual todo toda todos todas outro outra outros outras ou nem até desde
        porque pois lhe lhes me te
        """
    ),
    "italian": _words(
        """
        il lo la i gli le un uno una di del dello della dei degli delle a al
        allo alla ai agli alle da dal dalla dai dalle in nel nello nella nei
        negli nelle su sul sulla sui sulle con per tra fra e ed o non che chi
        è sono essere ha hanno come più ma anche se si ci ne mi ti vi lui lei
        loro noi voi io tu questo questa questi queste quello quella quelli
        quelle suo sua suoi sue molto già tutto tutti tutta tutte quando dove
        perché cui anche era stato
        """
    ),
    "dutch": _words(
        """
        de het een en van in is dat die op te met voor niet aan er zijn was
        om als ook dan maar bij of uit door naar over tot nog wel geen kan
        kunnen wordt worden werd hij zij ze wij we jij je u ik hem haar hun
        ons mijn uw zijn dit deze wat wie waar hoe waarom al alle meer veel
        zo nu hier daar toch onder tegen zonder tussen heeft hebben had moet
        zal zou mag
        """
    ),
    "swedish": _words(
        """
        och i att det som en på är av för med till den har de inte om ett
        han hon var sig men jag vi ni du så kan från eller man när då ut
        sin sitt sina vid under efter över också bara nu här där hur vad vem
        varför alla allt mycket mer än detta denna dessa skall ska kunna
        skulle blir blev vara varit hade mot utan mellan genom dem deras
        dess honom henne oss er min mitt mina ditt din
        """
    ),
    "norwegian": _words(
        """
        og i det som en på er av for med til den har de ikke om et han hun
        var seg men jeg vi dere du så kan fra eller man når da ut sin sitt
        sine ved under etter over også bare nå her der hvordan hva hvem
        hvorfor alle alt mye mer enn dette denne disse skal skulle blir ble
        være vært hadde mot uten mellom gjennom dem deres hans hennes oss
        meg deg min mitt mine ditt din å noe noen hvis ei
        """
    ),
    "danish": _words(
        """
        og i det som en på er af for med til den har de ikke om et han hun
        var sig men jeg vi i du så kan fra eller man når da ud sin sit sine
        ved under efter over også bare nu her der hvordan hvad hvem hvorfor
        alle alt meget mere end dette denne disse skal skulle bliver blev
        være været havde mod uden mellem gennem dem deres hans hendes os mig
        dig min mit mine dit din at noget nogen hvis
        """
    ),
    "finnish": _words(
        """
        ja on ei se että oli ovat olla kun mutta tai jos niin kuin myös
        vain sekä joka jotka mikä mitä miten miksi missä kanssa ilman
        mukaan sen sitä siitä siihen tämä tämän tätä nämä ne niiden hän he
        minä sinä me te minun sinun hänen heidän meidän teidän olen olet
        olemme ovat oli olivat ole voi voidaan kaikki kaikkia jo vielä
        sitten nyt tässä siinä tai eli koska vaan ennen jälkeen
        """
    ),
    "russian": _words(
        """
        и в во не что он на я с со как а то все она так его но да ты к у же
        вы за бы по только ее её мне было вот от меня еще ещё нет о из ему
        теперь когда даже ну вдруг ли если уже или ни быть был него до вас
        нибудь опять уж вам ведь там потом себя ничего ей может они тут где
        есть надо ней для мы тебя их чем была сам чтобы без будто чего раз
        тоже себе под будет ж тогда кто этот того потому этого какой совсем
        ним здесь этом один почти мой тем чтоб нее сейчас были куда зачем
        всех никогда можно при наконец два об другой хоть после над больше
        тот через эти нас про всего них какая много разве три эту моя
        впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им
        более всегда конечно всю между это также
        """
    ),
    "turkish": _words(
        """
        ve bir bu da de için ile çok ne ama gibi daha olarak en o şu ki mi
        mı mu mü veya ya her kadar sonra önce olan var yok değil ise hem
        göre ancak bunu şey tüm bütün diye eğer nasıl neden niçin kendi ben
        sen biz siz onlar bana sana onu bunun şimdi hiç ayrıca yani çünkü
        bile artık belki birçok bazı hangi nerede zaten sadece yine hep
        olan olarak olduğu
        """
    ),
    "polish": _words(
        """
        i w z na do nie że się to jest jak o od po za co tak ale przez dla
        jego jej ich czy lub oraz a ten ta te tego tej tym jako być był była
        było są może można już tylko też także bardzo jeszcze gdy kiedy
        gdzie który która które którego których ze we bez pod nad przed
        między u ja ty on ona my wy oni mnie mi go mu nas was im sobie się
        jeśli bo więc aby żeby ani tu tam teraz wszystko wszystkie
        """
    ),
    "indonesian": _words(
        """
        yang dan di ke dari ini itu dengan untuk pada adalah dalam tidak
        akan atau juga ada oleh sebagai karena bisa dapat sudah saya kami
        kita mereka anda dia ia telah harus jika agar seperti lebih antara
        tersebut para bahwa hanya setiap semua secara tetapi namun saat
        masih belum bagi hingga sampai sangat kepada yaitu lain sendiri
        apa siapa bagaimana mengapa dimana
        """
    ),
    "hungarian": _words(
        """
        a az és egy hogy nem is de van volt meg még csak már mint mert ha
        vagy el ki be le fel most itt ott ez azt ezt amely amelyek aki akik
        ami amit azok ezek kell lehet nagyon sok minden mindig után alatt
        között által szerint pedig vagyok vagyunk vannak lesz lett több
        igen sem én te ő mi ti ők neki nekem
        """
    ),
    "romanian": _words(
        """
        și în de la cu pe o un una a al ale ai lui ei nu că ce care este
        sunt fi fost pentru din prin mai sau dar ca se să sa mă ne vă le îi
        își acest această aceste acesta aceasta acel acea tot toate toți
        foarte după până despre între când unde cum doar sub fără spre
        eu tu el ea noi voi ei ele fie are au am avea ori iar
        """
    ),
    "czech": _words(
        """
        a v se na je že s z do o to i k ve ze za po pro jako jsou byl byla
        bylo být by není ale nebo jak tak už jen také když který která které
        kteří jeho její jejich tento tato toto tyto ten ta mezi před při
        podle bez pod nad od u aby však až ani jsem jsme jste já ty on ona
        my vy oni mu mi ho nás vás jim si sebe zde tam kde co proč velmi
        """
    ),
    "catalan": _words(
        """
        el la els les de del dels un una uns unes i o a al als en amb per
        que és són no es se hi ho ha han com més però molt ja aquest aquesta
        aquests aquestes aquell aquella seu seva seus seves també quan on
        qui quin quina tot tots tota totes entre sobre fins des sense perquè
        si ni jo tu ell ella nosaltres vosaltres ells elles li els ens us
        era estat fer pot
        """
    ),
    "basque": _words(
        """
        eta da ez du bat ere edo baina bere hau hori hura dira dago zen
        izan behar egin baino beste bezala gabe gero orain hemen han non nola
        zer nor zergatik guztiak guzti oso ala bai dute zuen zituen dut
        dugu dituzte nik zuk hark guk zuek haiek
        """
    ),
    "estonian": _words(
        """
        ja on ei et ta see oli ka kui aga või mis kes kus kuidas miks siis
        nii veel juba ainult väga kõik need selle seda sellest oma ma sa me
        te nad mina sina tema meie teie nemad olen oled oleme olete olid
        olema pole saab võib peab kuid ning sest enne pärast üle alla koos
        ilma vastu
        """
    ),
    "lithuanian": _words(
        """
        ir yra kad su į iš ne tai jis ji jie jos kaip bet ar o per apie
        už nuo iki po prie be tik jau dar labai kur kas kodėl kada visi
        viskas tas ta tie tos šis ši buvo būti bus gali reikia taip mes jūs
        aš tu jo jų savo mano tavo arba nes jei
        """
    ),
    "esperanto": _words(
        """
        la kaj de en al estas ne kun por mi vi li ŝi ĝi ni ili ke kiu kio
        kie kiel kiam kial sed aŭ da pri el ĉe post antaŭ sur sub tra inter
        sen ankaŭ nur jam tre tiu tio tie tiel ĉiu ĉio ĉiuj estis estos
        povas oni sia siaj lia ŝia ilia nia via mia unu se
        """
    ),
    "irish": _words(
        """
        an na agus is ar i le go a ag ó do de faoi chun mar níl tá bhí
        sé sí siad mé tú muid sibh seo sin ní nach gur ach nó uair
        freisin leis léi iad é í bhfuil atá acu aige aici orthu air uirthi
        """
    ),
    "serbian": _words(
        """
        i u je da se na za su od sa ili kao koji koja koje što šta ne to
        ali iz do po biti bi sam smo ste će ako još samo već kada gde kako
        zašto ovo ovaj ova ove taj ta te svi sve sa bez pod nad pred među
        ja ti on ona mi vi oni njegov njen njihov
        и у је да се на за су од са или као који која које што шта не то
        али из до по бити би сам смо сте ће ако још само већ када где како
        зашто ово овај ова ове тај та те сви све без под над пред међу
        ја ти он она ми ви они
        """
    ),
    "greek": _words(
        """
        και το η ο της του των τα τη την τον οι να σε στο στη στην στον
        στα στις στους με για από που είναι δεν θα ένα μια μία ως ή αλλά
        αν όπως όταν πως ότι αυτό αυτή αυτός αυτά αυτές αυτοί εγώ εσύ
        εμείς εσείς μου σου μας σας τους έχει έχουν ήταν κατά μετά πριν
        μέσα πάνω κάτω πολύ πιο μόνο επίσης όλα όλοι κάθε
        """
    ),
    "arabic": _words(
        """
        في من على إلى عن مع هذا هذه ذلك تلك التي الذي الذين هو هي هم
        أن إن كان كانت لا ما لم لن قد كل بعد قبل بين عند أو ثم حتى أي
        غير إذا كما لكن هل نحن أنا أنت أنتم هناك هنا أيضا فقط وهو وهي
        وفي ومن ولا عليه فيه منه به له لها لهم
        """
    ),
    "persian": _words(
        """
        و در به از که این را با است آن برای یک تا هم بر می شود کرد کند
        بود شد نیز اما یا هر دیگر خود ما من تو او شما آنها ایشان اگر
        چه چون باید هست نیست بین پس پیش همه وی کنید کنند شده
        """
    ),
    "hindi": _words(
        """
        के का की है में और को से पर यह एक हैं भी नहीं था थे थी कि जो
        कर करें करने किया लिए ही तो या हो होता होती गया वह ये वे इस उस
        इन उन तक साथ अपने अपना अपनी जब तब कुछ सभी बहुत मैं हम आप
        """
    ),
    "nepali": _words(
        """
        र को का की मा छ छन् हो हुन् पनि यो त्यो एक र गर्न गर्नुहोस्
        गर्ने गरेको लागि भन्दा बाट सँग थियो थिए भने भएको हुने यस उनी
        हामी तपाईं म तिमी सबै धेरै के कुनै अनि तर वा नै मात्र
        """
    ),
}


def is_stopword(token: str, languages: Iterable[str | None]) -> bool:
    """True if `token` (lowercase) is a function word of any of `languages`.

    Unknown languages (and None) are ignored.
    """
    for lang in languages:
        words = STOPWORDS.get(lang) if lang else None
        if words is not None and token in words:
            return True
    return False
